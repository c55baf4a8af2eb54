"""Browser tests: Playwright's sync API driving Debian's Chromium against pytest-django's live_server.

`make test` installs Chromium when it is missing (the `chromium` target); without it these tests skip
with a message saying how to get it.
"""

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

# Playwright's sync API keeps an event loop running in the test thread, and Django refuses ORM
# calls made while one runs. The calls here are plain synchronous ones, so this is safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


def _benign(text: str) -> bool:
    # A refused htmx request (403, 400) is logged by Chromium as a failed load, and htmx logs a
    # request it aborted itself (a newer keystroke replaced it, or the page moved on): both expected.
    return "Failed to load resource" in text or text.startswith(("htmx:sendAbort", "htmx:afterRequest"))


# Module scope, not session: a running sync Playwright keeps an asyncio loop in this thread, which
# would break later tests that call asyncio.run() or start their own Playwright.
@pytest.fixture(scope="module")
def chromium():
    pytest.importorskip("playwright")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: apt-get install chromium (or run `make test`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium, live_server):
    """A fresh browser context on the live server; fails the test on any JavaScript error."""
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}, accept_downloads=True
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" and not _benign(msg.text) else None)
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture
def dark_page(chromium, live_server):
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}, color_scheme="dark"
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def screenshot():
    """screenshot(page, "policies-list") saves test-output/screenshots/policies-list.png (full page).

    Only with SCREENSHOTS=1 (`make screenshots`): a picture asserts nothing, so `make test` skips taking them.
    """
    enabled = os.environ.get("SCREENSHOTS") == "1"
    if enabled:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str, *, full_page: bool = True) -> Path | None:
        if not enabled:
            return None
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


@pytest.fixture
def sign_in():
    """sign_in(page, "alice", password, next_path="/policies/"): through the real sign-in form."""

    def go(page, username: str, password: str, *, next_path: str = "/") -> None:
        page.goto(next_path)
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: urlsplit(url).path == next_path)

    return go
