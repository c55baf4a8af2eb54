"""The admin commands of design.md: create_tenant, create_api_key, set_secret."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from tenants.models import ApiKey, AuditEvent, Membership, Role, Tenant, TenantSecret

pytestmark = pytest.mark.django_db


def run(*args, stdin: str | None = None, monkeypatch=None) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _audit(tenant) -> list[tuple[str, str]]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("id").values_list("action", "actor_label"))


# --- create_tenant -------------------------------------------------------------------------


def test_create_tenant(db):
    out, _ = run("create_tenant", "initech", "--name", "Initech Labs")

    tenant = Tenant.objects.get(slug="initech")
    assert tenant.name == "Initech Labs"
    assert "initech" in out
    assert _audit(tenant) == [("tenants.tenant.created", "command:create_tenant")]


def test_create_tenant_defaults_the_name_to_the_slug(db):
    run("create_tenant", "initech")

    assert Tenant.objects.get(slug="initech").name == "initech"


def test_create_tenant_with_an_admin_login(db):
    out, _ = run(
        "create_tenant", "initech", "--admin-email", "peter@initech.example", "--admin-password", "tps-reports-2026"
    )

    user = get_user_model().objects.get(username="peter@initech.example")
    assert user.check_password("tps-reports-2026")
    with scopes_disabled():
        membership = Membership.objects.get(user=user)
    assert (membership.tenant.slug, membership.role) == ("initech", Role.ADMIN)
    assert "peter@initech.example" in out and "tps-reports-2026" not in out


def test_create_tenant_refuses_a_taken_slug(acme):
    with pytest.raises(CommandError, match="already exists"):
        run("create_tenant", "acme")


def test_create_tenant_refuses_a_bad_slug_and_writes_nothing(db):
    with pytest.raises(CommandError, match="slug"):
        run("create_tenant", "not a slug!")

    assert not Tenant.objects.exists()


def test_create_tenant_needs_email_and_password_together(db):
    with pytest.raises(CommandError):
        run("create_tenant", "initech", "--admin-email", "peter@initech.example")

    assert not Tenant.objects.exists()


# --- create_api_key ------------------------------------------------------------------------


def test_create_api_key_prints_the_key_alone_on_its_last_line(acme):
    out, err = run("create_api_key", "acme", "--name", "research agents")

    last = out.rstrip("\n").split("\n")[-1]
    assert re.fullmatch(r"gr_[A-Za-z0-9_-]{40,}", last)
    assert "It will not be shown again" in err
    with scopes_disabled():
        key = ApiKey.objects.get(name="research agents")
    assert key.tenant == acme and key.prefix == last[:10]
    assert last not in key.key_hash
    assert _audit(acme)[-1] == ("tenants.api_key.created", "command:create_api_key")


def test_the_printed_key_opens_the_api_for_that_tenant(acme):
    out, _ = run("create_api_key", "acme")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {out.strip().splitlines()[-1]}")

    response = client.get("/api/v1/ping/")

    assert response.status_code == 200
    assert response.json() == {"tenant": "acme"}


def test_each_call_makes_a_new_key(acme):
    first, _ = run("create_api_key", "acme")
    second, _ = run("create_api_key", "acme")

    assert first.strip() != second.strip()


def test_create_api_key_for_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="No tenant"):
        run("create_api_key", "nobody")


# --- set_secret ----------------------------------------------------------------------------


def test_set_secret_reads_the_value_from_stdin(acme, monkeypatch):
    out, _ = run("set_secret", "acme", "OPENAI_API_KEY", stdin="sk-from-stdin-0123456789\n", monkeypatch=monkeypatch)

    with scopes_disabled():
        secret = TenantSecret.objects.get(tenant=acme, name="OPENAI_API_KEY")
    assert secret.reveal() == "sk-from-stdin-0123456789"
    assert "sk-from-stdin" not in secret.ciphertext
    assert "sk-from-stdin" not in out
    assert "OPENAI_API_KEY" in out and "••••6789" in out
    assert _audit(acme)[-1] == ("tenants.secret.created", "command:set_secret")


def test_set_secret_replaces_and_keeps_inner_whitespace(acme, monkeypatch):
    run("set_secret", "acme", "OPENAI_API_KEY", stdin="old-value-123456", monkeypatch=monkeypatch)
    run("set_secret", "acme", "OPENAI_API_KEY", stdin="new value with spaces\r\n", monkeypatch=monkeypatch)

    with scopes_disabled():
        secrets = list(TenantSecret.objects.filter(tenant=acme))
    assert [s.reveal() for s in secrets] == ["new value with spaces"]
    assert _audit(acme)[-1][0] == "tenants.secret.updated"


def test_set_secret_shows_up_in_the_api_list_masked(acme, api, monkeypatch):
    run("set_secret", "acme", "GROQ_API_KEY", stdin="gsk-secret-abcdef987654", monkeypatch=monkeypatch)

    response = api.get("/api/v1/secrets/")

    assert response.json()["results"][0]["name"] == "GROQ_API_KEY"
    assert b"gsk-secret" not in response.content


@pytest.mark.parametrize(
    "name, stdin, message",
    [
        ("lowercase", "value", "name"),
        ("OPENAI_API_KEY", "", "value"),
        ("OPENAI_API_KEY", "\n", "value"),
        ("OPENAI_API_KEY", "a\x00b", "value"),
    ],
)
def test_set_secret_refuses_bad_input(acme, monkeypatch, name, stdin, message):
    with pytest.raises(CommandError, match=message):
        run("set_secret", "acme", name, stdin=stdin, monkeypatch=monkeypatch)

    with scopes_disabled():
        assert not TenantSecret.objects.exists()


def test_set_secret_for_an_unknown_tenant(db, monkeypatch):
    with pytest.raises(CommandError, match="No tenant"):
        run("set_secret", "nobody", "OPENAI_API_KEY", stdin="x", monkeypatch=monkeypatch)
