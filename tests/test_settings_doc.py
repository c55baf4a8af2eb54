"""docs/settings.md is generated from config/settings.py, and the two cannot drift apart."""

import subprocess
import sys
from pathlib import Path

import pytest

from config import settings_doc

ROOT = Path(__file__).resolve().parent.parent


def test_every_environment_variable_the_settings_read_is_described():
    names = [setting.name for setting in settings_doc.collect()]
    assert len(names) == len(set(names))
    for name in ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY", "DATABASE_URL", "HTTPS", "METRICS_TOKEN", "API_RATE_LIMIT"):
        assert name in names
    for name in (
        "WEBHOOK_ALLOWED_HOSTS",
        "LOGIN_FAILURE_LIMIT",
        "LOGIN_COOLOFF_MINUTES",
        "TRUSTED_PROXY_COUNT",
        "CACHE_URL",
    ):
        assert name in names


def test_the_committed_settings_page_is_the_generated_one():
    committed = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert committed == settings_doc.render(settings_doc.collect()), (
        "docs/settings.md is out of date: run `python -m config.settings_doc --write`"
    )


def test_the_check_command_passes_on_the_committed_page():
    result = subprocess.run(
        [sys.executable, "-m", "config.settings_doc", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_page_shows_each_default_as_the_settings_read_it():
    rows = {
        line.split(" | ")[0].strip("| `"): line for line in settings_doc.render(settings_doc.collect()).splitlines()
    }
    assert rows["API_RATE_LIMIT"].startswith("| `API_RATE_LIMIT` | `1200/min` | ")
    assert rows["HTTPS"].startswith("| `HTTPS` | `0` | ")
    assert rows["LOGIN_FAILURE_LIMIT"].startswith("| `LOGIN_FAILURE_LIMIT` | `5` | ")
    assert rows["METRICS_TOKEN"].startswith("| `METRICS_TOKEN` | empty | ")
    assert rows["DATABASE_URL"].startswith("| `DATABASE_URL` | SQLite in `var/` | ")


SETTINGS = """import os

#: KNOWN: a described setting.
KNOWN = os.environ.get("KNOWN", "1")
"""


def test_a_setting_read_without_a_description_is_an_error_naming_it(tmp_path):
    path = tmp_path / "settings.py"
    path.write_text(SETTINGS + 'NEW_ONE = int(os.environ.get("NEW_ONE", "5"))\n')
    with pytest.raises(settings_doc.SettingsDocError) as error:
        settings_doc.collect(path)
    assert str(error.value) == (
        "settings.py:5: NEW_ONE is read but not described: add `#: NEW_ONE: <what it does>` in the comment "
        "block right above the statement that reads it"
    )


def test_a_description_with_no_read_under_it_is_an_error(tmp_path):
    path = tmp_path / "settings.py"
    path.write_text(SETTINGS + "#: GONE: a setting that was removed.\nOTHER = 1\n")
    with pytest.raises(settings_doc.SettingsDocError) as error:
        settings_doc.collect(path)
    assert str(error.value) == (
        "settings.py:5: GONE is described but the statement under the comment does not read it from the environment"
    )


def test_a_description_belongs_to_the_statement_right_under_it(tmp_path):
    path = tmp_path / "settings.py"
    path.write_text(SETTINGS + '#: LATER: described too far up.\n\nLATER = os.environ.get("LATER", "")\n')
    with pytest.raises(settings_doc.SettingsDocError) as error:
        settings_doc.collect(path)
    assert "LATER is read but not described" in str(error.value)
    assert "LATER is described but the statement under the comment does not read it" in str(error.value)
