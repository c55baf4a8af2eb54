"""What the Makefile's targets install, read from `make -n` (commands printed, nothing run) on a fresh
virtualenv path: `make run` builds the demo's venv with the server and its runtime dependencies only;
the test-only tools (pytest, Playwright, ruff, mypy, mkdocs: the `test` extra) come with the targets
that use them."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _planned(target: str, tmp_path: Path) -> str:
    done = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'fresh-venv'}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_run_installs_the_server_without_the_test_tools(tmp_path):
    planned = _planned("run", tmp_path)
    assert "install -q -e .\n" in planned
    assert ".[test]" not in planned


@pytest.mark.parametrize("target", ["test", "lint", "docs", "bench", "screenshots"])
def test_targets_that_use_the_test_tools_install_them(target, tmp_path):
    assert '.[test]"' in _planned(target, tmp_path)
