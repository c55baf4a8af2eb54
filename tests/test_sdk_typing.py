"""The SDK is typed (it ships py.typed): `mypy --strict` on client/groundrule, with the settings of
client/pyproject.toml, must stay clean. Skipped where mypy is not installed (it is in the `test` extra)."""

import subprocess
import sys
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parent.parent / "client"


def test_the_sdk_passes_mypy_strict():
    pytest.importorskip("mypy")
    result = subprocess.run(
        # mypy keeps its cache in client/.mypy_cache (git-ignored): warm, this takes about a second.
        [sys.executable, "-m", "mypy"],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout
