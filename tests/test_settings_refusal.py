"""With DEBUG off the server refuses to start on the public development keys."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORT_SETTINGS = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"


def _start(**env) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY", "DEBUG", "AUDIT_SIGNING_KEYS", "OUTBOUND_ALLOWED_HOSTS")
    }
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


def test_production_refuses_the_development_audit_signing_key():
    result = _start(
        SECRET_KEY="s" * 50,
        GOVERNANCE_SECRETS_KEY="g" * 44,
        AUDIT_SIGNING_KEYS="dev:ZtBEtyolUwrlF8l3BwbbwL6uh0b5Z4RFFZd0VCdSvag=",
    )
    assert result.returncode != 0
    assert "AUDIT_SIGNING_KEYS must not hold the development key (it is public)" in result.stderr


def test_an_audit_key_that_does_not_parse_stops_the_start_naming_it():
    result = _start(DEBUG="1", AUDIT_SIGNING_KEYS="prod-2027:not-base64!")
    assert result.returncode != 0
    assert "AUDIT_SIGNING_KEYS: the key of 'prod-2027' is not 32 bytes of base64 (an Ed25519 key)." in result.stderr


def test_the_local_demo_signs_audit_checkpoints_with_the_development_key():
    result = _start(DEBUG="1", AUDIT_SIGNING_KEYS="")
    assert result.returncode == 0, result.stderr
