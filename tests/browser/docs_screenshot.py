"""Takes docs/img/overview.png, the picture in README.md and on the documentation site's home page:
the demo's Overview in headless Chromium, as `make run` shows it (`make docs-screenshot`).

Not a test (the browser tests check the pages); run it again when the Overview changes.
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.server_process import ServerProcess  # noqa: E402

OUT = ROOT / "docs" / "img" / "overview.png"


def main() -> None:
    # DEBUG on: the demo as `make run` serves it, with the development keys.
    with tempfile.TemporaryDirectory() as directory:
        server = ServerProcess(Path(directory), demo_runs=60, extra_env={"DEBUG": "1"})
        with server, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(base_url=server.url, viewport={"width": 1280, "height": 760})
            page.goto("/accounts/login/")
            page.fill("input[name=username]", "admin@demo.local")
            page.fill("input[name=password]", "groundrule-demo")
            page.click("button[type=submit]")
            page.wait_for_load_state("networkidle")
            page.wait_for_function("() => window.Chart && Object.keys(window.Chart.instances).length === 2")
            page.wait_for_timeout(600)  # the bars' entry animation
            OUT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUT), type="png")
            browser.close()
    print(f"Wrote {OUT} ({OUT.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
