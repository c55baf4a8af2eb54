"""deploy/compose.yaml, its Caddyfile and deploy/make_env.sh: TLS in front, generated secrets, no defaults."""

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
SECRETS = ("POSTGRES_PASSWORD", "SECRET_KEY", "GOVERNANCE_SECRETS_KEY", "AUDIT_SIGNING_KEYS")
HEX_SECRETS = ("POSTGRES_PASSWORD", "SECRET_KEY", "GOVERNANCE_SECRETS_KEY", "METRICS_TOKEN")
COMPOSE_TEXT = (DEPLOY / "compose.yaml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)


def _make_env(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(DEPLOY / "make_env.sh"), *args], capture_output=True, text=True)


def test_compose_has_no_default_for_any_secret_or_the_domain():
    for name in (*SECRETS, "GROUNDRULE_DOMAIN"):
        uses = re.findall(r"\$\{" + name + r"([^}]*)\}", COMPOSE_TEXT)
        assert uses, name
        assert not [use for use in uses if use.startswith(("-", ":-", "=", ":="))], f"{name} has a default"
        assert any(use.startswith(":?") for use in uses), f"{name} is not required"


def test_only_the_tls_proxy_is_published_and_the_app_trusts_its_forwarded_proto():
    services = COMPOSE["services"]
    published = sorted(name for name, service in services.items() if service.get("ports"))
    assert published == ["caddy"]
    assert services["caddy"]["ports"] == ["80:80", "443:443", "443:443/udp"]
    assert services["web"]["expose"] == ["8000"]
    env = COMPOSE["x-app"]["environment"]
    assert env["HTTPS"] == "true" and env["DEBUG"] == "0"
    assert env["ALLOWED_HOSTS"].startswith("${GROUNDRULE_DOMAIN:?")
    assert env["CSRF_TRUSTED_ORIGINS"] == "https://${GROUNDRULE_DOMAIN}"
    assert env["TRUSTED_PROXY_COUNT"] == "1" and env["PUBLIC_URL"] == "https://${GROUNDRULE_DOMAIN}"
    caddyfile = (DEPLOY / "Caddyfile").read_text()
    assert "{$GROUNDRULE_DOMAIN} {" in caddyfile
    assert "reverse_proxy web:8000" in caddyfile
    assert "header_up X-Forwarded-Proto {scheme}" in caddyfile


def test_make_env_prints_a_fresh_domain_and_secrets_file_each_time():
    first, second = _make_env("groundrule.example.com"), _make_env("groundrule.example.com")
    assert first.returncode == 0 and second.returncode == 0, first.stderr
    one = dict(line.split("=", 1) for line in first.stdout.splitlines())
    two = dict(line.split("=", 1) for line in second.stdout.splitlines())
    assert set(one) == {"GROUNDRULE_DOMAIN", *SECRETS, "METRICS_TOKEN"}
    assert one["GROUNDRULE_DOMAIN"] == "groundrule.example.com"
    for name in HEX_SECRETS:
        assert re.fullmatch(r"[0-9a-f]{48,96}", one[name]), name  # safe inside DATABASE_URL as it is
        assert one[name] != two[name]
    assert re.fullmatch(r"audit-\d{8}:[A-Za-z0-9+/]{43}=", one["AUDIT_SIGNING_KEYS"])
    assert one["AUDIT_SIGNING_KEYS"] != two["AUDIT_SIGNING_KEYS"]


def test_make_env_without_a_domain_says_how_to_call_it():
    result = _make_env()
    assert result.returncode == 2
    usage = f"usage: {DEPLOY / 'make_env.sh'} DOMAIN   (the host name users will open, e.g. groundrule.example.com)"
    assert result.stderr == usage + "\n"
    assert result.stdout == ""


def test_the_generated_env_starts_production_settings_behind_the_proxy():
    generated = dict(line.split("=", 1) for line in _make_env("groundrule.example.com").stdout.splitlines())
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", *SECRETS)}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="0",
        HTTPS="true",
        SECRET_KEY=generated["SECRET_KEY"],
        GOVERNANCE_SECRETS_KEY=generated["GOVERNANCE_SECRETS_KEY"],
        AUDIT_SIGNING_KEYS=generated["AUDIT_SIGNING_KEYS"],
        TRUSTED_PROXY_COUNT="1",
        ALLOWED_HOSTS=f"{generated['GROUNDRULE_DOMAIN']},localhost,127.0.0.1",
    )
    shown = (
        "from django.conf import settings as s; "
        "print(s.SECURE_PROXY_SSL_HEADER, s.SESSION_COOKIE_SECURE, s.AUDIT_KEYS.signer is not None)"
    )
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {shown}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https') True True"
