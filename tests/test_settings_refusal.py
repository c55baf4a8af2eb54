"""With DEBUG off the server refuses to start on the public development keys."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORT_SETTINGS = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"


def _start(**env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY", "DEBUG")}
    return subprocess.run(
        [sys.executable, "-c", IMPORT_SETTINGS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        timeout=60,
    )


def test_production_refuses_to_start_without_its_own_keys():
    result = _start()
    assert result.returncode != 0
    assert "set SECRET_KEY and GOVERNANCE_SECRETS_KEY" in result.stderr


def test_production_refuses_the_development_secret_key_even_when_set_explicitly():
    result = _start(SECRET_KEY="groundrule-insecure-development-key-change-me", GOVERNANCE_SECRETS_KEY="x" * 40)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr


def test_production_refuses_a_missing_secrets_key():
    result = _start(SECRET_KEY="s" * 50)
    assert result.returncode != 0 and "set GOVERNANCE_SECRETS_KEY" in result.stderr


def test_production_starts_with_its_own_keys():
    result = _start(SECRET_KEY="s" * 50, GOVERNANCE_SECRETS_KEY="g" * 44)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_local_demo_starts_with_debug_on_and_no_keys():
    result = _start(DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
