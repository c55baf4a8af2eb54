"""config.settings_build: what the image build runs collectstatic with. It needs no key, and a process
started on it by mistake can serve nothing: its keys are random and its database cannot be queried."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY", "DEBUG")}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings_build", **env},
        timeout=120,
    )


def test_collectstatic_runs_with_no_secret_in_the_environment(tmp_path):
    result = _run(
        "from django.core.management import call_command; call_command('collectstatic', '--noinput', '-v', '0')",
        STATIC_ROOT=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "vendor" / "htmx.min.js").is_file()
    assert (tmp_path / "css" / "app.css").is_file()


def test_its_keys_are_random_and_debug_is_off_whatever_the_environment_says():
    code = "from django.conf import settings as s; print(s.DEBUG, s.SECRET_KEY, s.GOVERNANCE_SECRETS_KEY)"
    first, second = _run(code, DEBUG="1"), _run(code, SECRET_KEY="x" * 50)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    debug, key, secrets_key = first.stdout.split()
    assert debug == "False"
    assert key.startswith("build-only-") and secrets_key.startswith("build-only-")
    assert first.stdout != second.stdout


def test_a_process_on_the_build_settings_cannot_query_a_database():
    result = _run("from django.db import connection; connection.cursor()")
    assert result.returncode != 0
    assert "settings.DATABASES is improperly configured" in result.stderr
