"""API key scopes (issue 14 item 1): agent / read / admin, pinned agents, expiry, last use, legacy keys.

The scope is checked in one place (tenants.auth.HasScope, the default permission class); these
tests go through the real endpoints with real keys.
"""

import io
import re
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from tenants import services
from tenants.audit import Actor
from tenants.models import ApiKey, KeyScope

SYSTEM = Actor.system("tests")
pytestmark = pytest.mark.django_db


def client_for(tenant, scope=KeyScope.AGENT, **kwargs):
    key, raw = services.api_key_create(tenant=tenant, name=f"{scope} key", actor=SYSTEM, scope=scope, **kwargs)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client, key


def start_run(client, agent="support-bot"):
    response = client.post("/api/v1/runs/", {"agent_name": agent}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_new_keys_default_to_the_agent_scope(acme):
    key, _ = services.api_key_create(tenant=acme, name="plain", actor=SYSTEM)
    assert key.scope == KeyScope.AGENT and key.agents == [] and key.expires_at is None


def test_legacy_is_never_granted(acme):
    with pytest.raises(Exception) as exc:
        services.api_key_create(tenant=acme, name="x", actor=SYSTEM, scope=KeyScope.LEGACY)
    assert "scope" in str(exc.value)


# --- what each scope may do -----------------------------------------------------------------


def test_agent_key_does_the_agent_calls(acme):
    agent, _ = client_for(acme)
    assert agent.get("/api/v1/ping/").status_code == 200
    run_id = start_run(agent)
    report = agent.post(f"/api/v1/runs/{run_id}/grounding/", {"grounding_scores": [0.9]}, format="json")
    assert report.status_code == 200, report.content
    span = agent.post(f"/api/v1/runs/{run_id}/spans/", {"kind": "tool", "name": "search"}, format="json")
    assert span.status_code == 201, span.content
    assert agent.post("/api/v1/grounding/decide/", {"agent_name": "support-bot"}, format="json").status_code == 200
    check = agent.post("/api/v1/grounding/check/", {"text": "The sky is blue.", "sources": []}, format="json")
    assert check.status_code == 200
    assert agent.get(f"/api/v1/runs/{run_id}/").status_code == 200
    assert agent.post(f"/api/v1/runs/{run_id}/complete/", {"output": "done"}, format="json").status_code == 200


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("get", "/api/v1/policies/", None),
        ("get", "/api/v1/evaluations/", None),
        ("get", "/api/v1/evaluations/export", None),
        ("get", "/api/v1/audit-log/", None),
        ("get", "/api/v1/audit-log/export", None),
    ],
)
def test_agent_key_is_refused_reads_beyond_its_runs_naming_the_scope(acme, method, path, body):
    agent, _ = client_for(acme)
    response = getattr(agent, method)(path)
    assert response.status_code == 403
    assert response.json()["detail"] == "This needs an API key with the read scope; this key has the agent scope."


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("post", "/api/v1/policies/", {"name": "Off", "category": "grounding"}),
        ("put", "/api/v1/secrets/OPENAI_BASE_URL/", {"value": "https://evil.example.com/v1"}),
        ("get", "/api/v1/secrets/", None),
        ("get", "/api/v1/api-keys/", None),
        ("post", "/api/v1/api-keys/", {"name": "mine", "scope": "admin"}),
    ],
)
@pytest.mark.parametrize("scope", [KeyScope.AGENT, KeyScope.READ])
def test_admin_calls_need_the_admin_scope(acme, scope, method, path, body):
    client, _ = client_for(acme, scope)
    response = getattr(client, method)(path, body, format="json") if body else getattr(client, method)(path)
    assert response.status_code == 403
    assert response.json()["detail"] == f"This needs an API key with the admin scope; this key has the {scope} scope."
    with scopes_disabled():
        assert not acme.secrets.exists()
        assert ApiKey.objects.filter(tenant=acme).count() == 1


def test_agent_key_cannot_disable_the_policies_that_govern_it(acme, make_policy):
    policy = make_policy()
    agent, _ = client_for(acme)
    assert agent.patch(f"/api/v1/policies/{policy.pk}/", {"enabled": False}, format="json").status_code == 403
    assert agent.delete(f"/api/v1/policies/{policy.pk}/").status_code == 403
    policy.refresh_from_db()
    assert policy.enabled


def test_read_key_reads_everything_and_writes_nothing(acme, api, make_policy):
    policy = make_policy()
    run_id = start_run(api)
    reader, _ = client_for(acme, KeyScope.READ)
    for path in (
        "/api/v1/runs/",
        f"/api/v1/runs/{run_id}/",
        "/api/v1/policies/",
        f"/api/v1/policies/{policy.pk}/",
        "/api/v1/evaluations/",
        "/api/v1/evaluations/export?format=jsonl",
        "/api/v1/audit-log/",
        "/api/v1/audit-log/export",
        "/api/v1/ping/",
    ):
        assert reader.get(path).status_code == 200, path
    refused = reader.post("/api/v1/runs/", {"agent_name": "x"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "This needs an API key with the agent scope; this key has the read scope."
    assert (
        reader.post(f"/api/v1/runs/{run_id}/grounding/", {"grounding_scores": [0.1]}, format="json").status_code == 403
    )


def test_admin_key_may_do_everything(acme):
    admin, _ = client_for(acme, KeyScope.ADMIN)
    assert admin.put("/api/v1/secrets/GROQ_API_KEY/", {"value": "gsk_x" * 4}, format="json").status_code == 201
    assert admin.post("/api/v1/policies/", {"name": "P", "category": "grounding"}, format="json").status_code == 201
    run_id = start_run(admin)
    assert admin.get(f"/api/v1/runs/{run_id}/").status_code == 200


# --- an agent key sees its own runs only ------------------------------------------------------


def test_agent_key_reads_and_reports_only_the_runs_it_started(acme):
    mine_client, mine_key = client_for(acme)
    other_client, _ = client_for(acme)
    mine = start_run(mine_client)
    theirs = start_run(other_client)
    listed = mine_client.get("/api/v1/runs/").json()["results"]
    assert [r["id"] for r in listed] == [mine]
    assert mine_client.get(f"/api/v1/runs/{theirs}/").status_code == 404
    assert (
        mine_client.post(f"/api/v1/runs/{theirs}/grounding/", {"grounding_scores": [0.1]}, format="json").status_code
        == 404
    )
    assert mine_client.post(f"/api/v1/runs/{theirs}/complete/", {}, format="json").status_code == 404
    assert (
        mine_client.post(f"/api/v1/runs/{theirs}/spans/", {"kind": "tool", "name": "x"}, format="json").status_code
        == 404
    )
    assert mine_client.get("/api/v1/runs/99999999/").status_code == 404
    with scopes_disabled():
        from governance.models import Run

        assert Run.objects.get(pk=theirs).status == "running"
        assert not Run.objects.get(pk=theirs).reports.exists()


def test_another_tenants_run_is_404_for_every_scope(acme, globex, other_api):
    theirs = start_run(other_api)
    for scope in (KeyScope.AGENT, KeyScope.READ, KeyScope.ADMIN):
        client, _ = client_for(acme, scope)
        assert client.get(f"/api/v1/runs/{theirs}/").status_code == 404


# --- pinned agents --------------------------------------------------------------------------


def test_pinned_agent_key_may_only_act_for_its_agents(acme):
    pinned, _ = client_for(acme, agents=["support-*", "triage"])
    assert start_run(pinned, "support-eu")
    assert start_run(pinned, "triage")
    refused = pinned.post("/api/v1/runs/", {"agent_name": "billing-agent"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "This API key may only act for agents matching: support-*, triage."
    decide = pinned.post("/api/v1/grounding/decide/", {"agent_name": "billing-agent"}, format="json")
    assert decide.status_code == 403
    with scopes_disabled():
        from governance.models import Run

        assert sorted(Run.objects.values_list("agent_name", flat=True)) == ["support-eu", "triage"]


def test_a_pin_is_checked_against_the_name_as_stored(acme):
    # The serializer trims the name: " admin" passed a pin "[!a]*" as sent, then ran as agent "admin".
    for pin, name in (("[!a]*", " admin"), ("support-?", "support- ")):
        pinned, _ = client_for(acme, agents=[pin])
        refused = pinned.post("/api/v1/runs/", {"agent_name": name}, format="json")
        assert refused.status_code == 403, (name, refused.content)
        assert pinned.post("/api/v1/grounding/decide/", {"agent_name": name}, format="json").status_code == 403
    assert start_run(pinned, " support-x ")  # trimmed, it is one of the key's agents
    with scopes_disabled():
        from governance.models import Run

        assert list(Run.objects.values_list("agent_name", flat=True)) == ["support-x"]


def test_pins_are_for_agent_keys_only(acme):
    with pytest.raises(Exception) as exc:
        services.api_key_create(tenant=acme, name="x", actor=SYSTEM, scope=KeyScope.READ, agents=["a"])
    assert "agents" in str(exc.value)


# --- expiry and last use --------------------------------------------------------------------


def test_expired_key_is_401(acme):
    client, key = client_for(acme, expires_in_days=1)
    assert client.get("/api/v1/ping/").status_code == 200
    ApiKey.objects.with_scopes_disabled().filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v1/ping/")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_last_use_is_recorded(acme):
    client, key = client_for(acme)
    assert key.last_used_at is None
    client.get("/api/v1/ping/")
    with scopes_disabled():
        assert ApiKey.objects.get(pk=key.pk).last_used_at is not None


@pytest.mark.parametrize("days", [0, -1, 4000])
def test_expiry_must_be_sensible(acme, days):
    with pytest.raises(Exception) as exc:
        services.api_key_create(tenant=acme, name="x", actor=SYSTEM, expires_in_days=days)
    assert "expires_in_days" in str(exc.value)


# --- the keys API ---------------------------------------------------------------------------


def test_keys_api_lists_scope_expiry_and_last_use_without_secrets(acme, api):
    created = api.post(
        "/api/v1/api-keys/",
        {"name": "eu agents", "scope": "agent", "agents": ["support-*"], "expires_in_days": 30},
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["key"].startswith("gr_") and body["scope"] == "agent" and body["agents"] == ["support-*"]
    listed = api.get("/api/v1/api-keys/").json()["results"]
    row = next(r for r in listed if r["name"] == "eu agents")
    assert set(row) == {
        "id",
        "name",
        "prefix",
        "scope",
        "agents",
        "expires_at",
        "last_used_at",
        "created_at",
        "revoked_at",
    }
    assert body["key"] not in api.get("/api/v1/api-keys/").content.decode()
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=f"Bearer {body['key']}")
    assert fresh.post("/api/v1/runs/", {"agent_name": "support-1"}, format="json").status_code == 201
    assert api.delete(f"/api/v1/api-keys/{row['id']}/").status_code == 204
    assert fresh.get("/api/v1/ping/").status_code == 401


@pytest.mark.parametrize(
    "body,field",
    [
        ({"name": "x", "scope": "legacy"}, "scope"),
        ({"name": "x", "scope": "root"}, "scope"),
        ({"name": "x", "expires_in_days": 0}, "expires_in_days"),
        ({"name": "x", "agents": "support-*"}, "agents"),
        ({"name": "x", "scope": "read", "agents": ["a"]}, "agents"),
        ({"scope": "agent"}, "name"),
    ],
)
def test_keys_api_bad_input_names_the_field(api, body, field):
    response = api.post("/api/v1/api-keys/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()


def test_another_tenants_key_is_404_on_the_keys_api(acme, globex, other_api):
    key, raw = services.api_key_create(tenant=acme, name="acme", actor=SYSTEM)
    assert other_api.delete(f"/api/v1/api-keys/{key.pk}/").status_code == 404
    assert "acme" not in [r["name"] for r in other_api.get("/api/v1/api-keys/").json()["results"]]
    with scopes_disabled():
        assert ApiKey.objects.get(pk=key.pk).revoked_at is None


# --- the command ----------------------------------------------------------------------------


def test_create_api_key_command_takes_scope_agents_and_expiry(acme):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "create_api_key",
        "acme",
        "--scope",
        "agent",
        "--agents",
        "support-*,triage",
        "--expires",
        "7",
        stdout=out,
        stderr=err,
    )
    raw = out.getvalue().rstrip("\n").split("\n")[-1]
    assert re.fullmatch(r"gr_[A-Za-z0-9_-]{40,}", raw)
    with scopes_disabled():
        key = ApiKey.objects.get(prefix=raw[:10])
    assert key.scope == "agent" and key.agents == ["support-*", "triage"]
    assert timedelta(days=6, hours=23) < key.expires_at - timezone.now() <= timedelta(days=7)
    assert "agent API key" in err.getvalue()


def test_create_api_key_command_defaults_to_agent_and_refuses_bad_scope(acme):
    out = io.StringIO()
    call_command("create_api_key", "acme", stdout=out, stderr=io.StringIO())
    with scopes_disabled():
        assert ApiKey.objects.get(prefix=out.getvalue().strip()[:10]).scope == "agent"
    with pytest.raises((CommandError, SystemExit)):  # argparse refuses a choice it does not offer
        call_command("create_api_key", "acme", "--scope", "legacy", stdout=io.StringIO(), stderr=io.StringIO())


# --- the dashboard keys page ----------------------------------------------------------------


def test_keys_page_creates_scoped_keys(client, alice, acme):
    client.force_login(alice)
    response = client.post(
        "/settings/api-keys/", {"name": "eu", "scope": "agent", "agents": "support-*, triage", "expires_in_days": "30"}
    )
    assert response.status_code == 200
    with scopes_disabled():
        key = ApiKey.objects.get(name="eu")
    assert key.scope == "agent" and key.agents == ["support-*", "triage"] and key.expires_at is not None
    page = client.get("/settings/api-keys/").text
    assert "support-*, triage" in page and "legacy-keys-notice" not in page


def test_keys_page_refuses_bad_scope_and_pins_on_read_keys(client, alice, acme):
    client.force_login(alice)
    assert client.post("/settings/api-keys/", {"name": "x", "scope": "legacy"}).status_code == 400
    response = client.post("/settings/api-keys/", {"name": "x", "scope": "read", "agents": "a"})
    assert response.status_code == 400 and "Only agent keys are pinned" in response.text
    with scopes_disabled():
        assert not ApiKey.objects.filter(tenant=acme).exists()


def test_keys_page_marks_legacy_keys_and_recommends_replacing_them(client, alice, acme):
    key, _ = services.api_key_create(tenant=acme, name="old one", actor=SYSTEM)
    ApiKey.objects.with_scopes_disabled().filter(pk=key.pk).update(scope=KeyScope.LEGACY)
    client.force_login(alice)
    page = client.get("/settings/api-keys/").text
    assert "legacy-keys-notice" in page and "We recommend replacing it" in page
    assert ">legacy</span>" in page


# --- the migration --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_keys_made_before_the_migration_become_legacy_with_full_rights():
    executor = MigrationExecutor(connection)
    executor.migrate([("tenants", "0002_auditevent")])
    old_apps = executor.loader.project_state([("tenants", "0002_auditevent")]).apps
    Tenant = old_apps.get_model("tenants", "Tenant")
    OldKey = old_apps.get_model("tenants", "ApiKey")
    tenant = Tenant.objects.create(slug="old", name="Old")
    OldKey.objects.create(tenant=tenant, name="before", prefix="gr_before", key_hash="0" * 64)
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    with scopes_disabled():
        key = ApiKey.objects.get(name="before")
        assert key.scope == KeyScope.LEGACY and key.full_rights
        new, _ = services.api_key_create(tenant=key.tenant, name="after", actor=SYSTEM)
        assert new.scope == KeyScope.AGENT
