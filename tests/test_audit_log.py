"""The audit log: every change to policies, keys and secrets, with who, what, the request id,
and before/after JSON with secrets masked. Append-only, listed and filtered over the API."""

import pytest
from api_support import STRICT, create_policy, dumps, post_json
from django_scopes import scope, scopes_disabled

from core.context import request_id_var
from tenants import services as tenant_services
from tenants.audit import SECRET_MASK, Actor
from tenants.models import ApiKey, AuditEvent

pytestmark = pytest.mark.django_db


def _events(tenant, prefix: str = "") -> list[AuditEvent]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant, action__startswith=prefix).order_by("id"))


@pytest.fixture
def key_label(acme_key) -> str:
    _, raw = acme_key
    return f"api-key:{raw[:10]}"


def test_policy_create_update_and_delete_are_audited_with_the_request_id(api, acme, key_label):
    created = post_json(
        api,
        "/api/v1/policies/",
        {"name": "Strict", "category": "grounding", "rules": STRICT},
        HTTP_X_REQUEST_ID="req-create-1",
    )
    updated = api.patch(
        f"/api/v1/policies/{created.json()['id']}/",
        {"rules": {"min_citations": 3}},
        format="json",
        HTTP_X_REQUEST_ID="req-update-2",
    )
    deleted = api.delete(f"/api/v1/policies/{created.json()['id']}/", HTTP_X_REQUEST_ID="req-delete-3")

    assert [r["X-Request-ID"] for r in (created, updated, deleted)] == ["req-create-1", "req-update-2", "req-delete-3"]
    events = _events(acme, "policies.")
    assert [(e.action, e.request_id, e.actor_label) for e in events] == [
        ("policies.policy.created", "req-create-1", key_label),
        ("policies.policy.updated", "req-update-2", key_label),
        ("policies.policy.deleted", "req-delete-3", key_label),
    ]
    policy_id = str(created.json()["id"])
    assert {(e.object_type, e.object_id, e.object_repr) for e in events} == {("policies.policy", policy_id, "Strict")}
    create, update, delete = events
    assert create.before is None and create.after["rules"] == STRICT and create.after["version"] == 1
    assert update.before["rules"] == STRICT and update.after["rules"] == {"min_citations": 3}
    assert (update.before["version"], update.after["version"]) == (1, 2)
    assert delete.before["name"] == "Strict" and delete.after is None


def test_enabling_and_disabling_have_their_own_codes(api, acme):
    created = create_policy(api)

    api.patch(f"/api/v1/policies/{created['id']}/", {"enabled": False}, format="json")
    api.patch(f"/api/v1/policies/{created['id']}/", {"enabled": True}, format="json")

    assert [e.action for e in _events(acme, "policies.")] == [
        "policies.policy.created",
        "policies.policy.disabled",
        "policies.policy.enabled",
    ]


def test_a_refused_change_is_not_audited(api, acme):
    created = create_policy(api)
    count = len(_events(acme))

    api.patch(f"/api/v1/policies/{created['id']}/", {"rules": {"min_citations": -1}}, format="json")
    post_json(api, "/api/v1/policies/", {"name": "x", "category": "nope"})

    assert len(_events(acme)) == count


def test_an_unsafe_request_id_is_replaced(api, acme):
    response = post_json(
        api, "/api/v1/policies/", {"name": "x", "category": "grounding"}, HTTP_X_REQUEST_ID="<script>alert(1)</script>"
    )

    generated = response["X-Request-ID"]
    assert generated != "<script>alert(1)</script>" and len(generated) == 32
    assert _events(acme, "policies.")[-1].request_id == generated


def test_api_key_create_and_revoke_are_audited_without_the_key(acme, alice):
    token = request_id_var.set("req-keys-9")
    try:
        key, raw = tenant_services.api_key_create(tenant=acme, name="ci", actor=Actor(user=alice))
        tenant_services.api_key_revoke(key=key, actor=Actor(user=alice))
        tenant_services.api_key_revoke(key=key, actor=Actor(user=alice))  # revoking twice changes nothing
    finally:
        request_id_var.reset(token)

    events = _events(acme, "tenants.api_key.")[-2:]
    assert [(e.action, e.request_id, e.actor_label, e.actor_id) for e in events] == [
        ("tenants.api_key.created", "req-keys-9", "alice", alice.pk),
        ("tenants.api_key.revoked", "req-keys-9", "alice", alice.pk),
    ]
    assert events[0].after == {"name": "ci", "prefix": raw[:10], "scope": "agent", "agents": [], "expires_at": None}
    assert (events[1].before["revoked"], events[1].after["revoked"]) == (False, True)
    assert raw not in dumps([e.before for e in events] + [e.after for e in events])
    with scopes_disabled():
        assert ApiKey.objects.get(pk=key.pk).revoked_at is not None


def test_secret_set_replace_and_delete_are_audited_masked(api, acme, key_label):
    api.put(
        "/api/v1/secrets/OPENAI_API_KEY/",
        {"value": "sk-first-value-123456"},
        format="json",
        HTTP_X_REQUEST_ID="req-secret-1",
    )
    api.put(
        "/api/v1/secrets/OPENAI_API_KEY/",
        {"value": "sk-second-value-654321"},
        format="json",
        HTTP_X_REQUEST_ID="req-secret-2",
    )
    api.delete("/api/v1/secrets/OPENAI_API_KEY/", HTTP_X_REQUEST_ID="req-secret-3")

    events = _events(acme, "tenants.secret.")
    assert [(e.action, e.request_id, e.actor_label) for e in events] == [
        ("tenants.secret.created", "req-secret-1", key_label),
        ("tenants.secret.updated", "req-secret-2", key_label),
        ("tenants.secret.deleted", "req-secret-3", key_label),
    ]
    created, updated, deleted = events
    assert created.before is None
    assert created.after == {"name": "OPENAI_API_KEY", "value": SECRET_MASK, "hint": "••••3456"}
    assert updated.before == {"name": "OPENAI_API_KEY", "value": SECRET_MASK}
    assert deleted.before == {"name": "OPENAI_API_KEY", "value": SECRET_MASK} and deleted.after is None
    text = dumps([e.before for e in events] + [e.after for e in events])
    assert "sk-first-value" not in text and "sk-second-value" not in text


def test_audit_events_belong_to_their_tenant(api, other_api, acme, globex):
    create_policy(api, name="Acme policy")
    create_policy(other_api, name="Globex policy")

    assert {e.object_repr for e in _events(acme, "policies.")} == {"Acme policy"}
    assert {e.object_repr for e in _events(globex, "policies.")} == {"Globex policy"}


def test_the_audit_log_is_listed_newest_first(api, key_label):
    created = create_policy(api, name="Listed")
    api.put("/api/v1/secrets/GROQ_API_KEY/", {"value": "gsk-0123456789abcdef"}, format="json")

    response = api.get("/api/v1/audit-log/")

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["action"] for r in results[:2]] == ["tenants.secret.created", "policies.policy.created"]
    assert set(results[0]) == {
        "id",
        "created_at",
        "action",
        "actor",
        "request_id",
        "object_type",
        "object_id",
        "object_repr",
        "before",
        "after",
        "tenant_id",
        "seq",
        "prev_hash",
        "hash",
    }
    assert results[1]["object_id"] == str(created["id"]) and results[1]["actor"] == key_label


def test_the_audit_log_filters_by_action_prefix_actor_and_request_id(api, key_label):
    create_policy(api, name="One")
    api.put(
        "/api/v1/secrets/GROQ_API_KEY/", {"value": "gsk-0123456789abcdef"}, format="json", HTTP_X_REQUEST_ID="find-me"
    )

    policies = api.get("/api/v1/audit-log/?action=policies.").json()["results"]
    by_key = api.get("/api/v1/audit-log/", {"actor": key_label}).json()["results"]
    by_request = api.get("/api/v1/audit-log/?request_id=find-me").json()["results"]

    assert {r["action"] for r in policies} == {"policies.policy.created"}
    assert {r["action"] for r in by_key} == {"policies.policy.created", "tenants.secret.created"}
    assert [r["action"] for r in by_request] == ["tenants.secret.created"]


def test_the_audit_log_is_append_only(api, acme):
    create_policy(api)
    event = _events(acme)[-1]

    with scope(tenant=acme):
        with pytest.raises(PermissionError):
            AuditEvent.objects.filter(pk=event.pk).update(action="rewritten")
        with pytest.raises(PermissionError):
            AuditEvent.objects.filter(pk=event.pk).delete()
    event.action = "rewritten"
    with pytest.raises(PermissionError):
        event.save()
    with pytest.raises(PermissionError):
        event.delete()
    assert _events(acme)[-1].action == "policies.policy.created"


def test_membership_and_tenant_changes_are_audited(acme, alice, bob):
    actions = [e.action for e in _events(acme, "tenants.")]

    assert actions[0] == "tenants.tenant.created"
    assert actions.count("tenants.membership.created") == 2
