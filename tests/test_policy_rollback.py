"""Rollback (issue 11 item 3): a new version with an old version's settings, by API and on the history page."""

import pytest
from api_support import LENIENT, STRICT, create_policy, post_json
from django_scopes import scope, scopes_disabled

from policies import services
from policies.models import Policy, PolicyVersion
from tenants.audit import Actor
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db


def _versions(policy_id):
    with scopes_disabled():
        return list(PolicyVersion.objects.filter(policy_ref=policy_id).order_by("version"))


def test_rollback_makes_a_new_version_with_the_old_settings(api):
    policy = create_policy(api, rules=STRICT, agents=["research-agent"])
    pk = policy["id"]
    assert (
        api.patch(f"/api/v1/policies/{pk}/", {"rules": LENIENT, "scope": {"agents": []}}, format="json").status_code
        == 200
    )
    assert api.patch(f"/api/v1/policies/{pk}/", {"enabled": False}, format="json").json()["version"] == 3

    response = post_json(api, f"/api/v1/policies/{pk}/rollback/", {"version": 1})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["version"] == 4
    assert body["rules"] == policy["rules"]
    assert body["scope"] == {"agents": ["research-agent"]}
    assert body["enabled"] is True
    last = _versions(pk)[-1]
    assert (last.version, last.change, last.rolled_back_to) == (4, "rolled_back", 1)
    assert last.snapshot["rules"] == policy["rules"]
    with scopes_disabled():
        event = AuditEvent.objects.filter(action="policies.policy.rolled_back").get()
    assert event.object_id == str(pk) and event.after["rolled_back_to"] == 1
    assert event.before["version"] == 3 and event.before["enabled"] is False


def test_rollback_changes_what_the_engine_decides(api):
    pk = create_policy(api, rules=STRICT)["id"]
    api.patch(f"/api/v1/policies/{pk}/", {"rules": {**STRICT, "action_on_violation": "warn"}}, format="json")
    run = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()["id"]
    assert (
        post_json(api, f"/api/v1/runs/{run}/grounding/", {"grounding_scores": [0.1]}).json()["decision"]["action"]
        == "warn"
    )
    post_json(api, f"/api/v1/policies/{pk}/rollback/", {"version": 1})
    run = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()["id"]
    assert (
        post_json(api, f"/api/v1/runs/{run}/grounding/", {"grounding_scores": [0.1]}).json()["decision"]["action"]
        == "block"
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "version"),
        ({"version": "1"}, "version"),
        ({"version": 0}, "version"),
        ({"version": 99}, "version"),
        ({"version": True}, "version"),
        ({"version": 1, "extra": 1}, "extra"),
        ({"version": 2}, "version"),  # the current version
    ],
)
def test_bad_rollback_input_is_a_400_naming_the_field(api, body, field):
    pk = create_policy(api)["id"]
    api.patch(f"/api/v1/policies/{pk}/", {"enabled": False}, format="json")
    response = post_json(api, f"/api/v1/policies/{pk}/rollback/", body)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert len(_versions(pk)) == 2


def test_another_tenants_policy_cannot_be_rolled_back(api, other_api):
    pk = create_policy(api)["id"]
    api.patch(f"/api/v1/policies/{pk}/", {"enabled": False}, format="json")
    assert post_json(other_api, f"/api/v1/policies/{pk}/rollback/", {"version": 1}).status_code == 404
    with scopes_disabled():
        assert Policy.objects.get(pk=pk).version == 2


def test_rollback_is_in_the_schema(api):
    schema = api.get("/api/v1/schema/?format=json").content.decode()
    assert "/api/v1/policies/{id}/rollback/" in schema


# --- the history page ----------------------------------------------------------------------------


def test_admin_rolls_back_from_the_history_page(client, alice, make_policy):
    policy = make_policy(rules={"min_citations": 2})
    client.force_login(alice)
    with scope(tenant=policy.tenant):
        services.policy_update(policy=policy, actor=Actor.system("tests"), rules={"min_citations": 5})
    page = client.get(f"/policies/{policy.pk}/history/").text
    assert "Roll back to v1" in page and "Roll back to v2" not in page
    response = client.post(f"/policies/{policy.pk}/rollback/", {"version": "1"})
    assert response.status_code == 302
    with scopes_disabled():
        policy.refresh_from_db()
    assert (policy.version, policy.rules) == (3, {"min_citations": 2})
    page = client.get(f"/policies/{policy.pk}/history/").text
    assert "rolled back to v1" in page


def test_history_page_rollback_is_admin_only_and_tenant_isolated(client, bob, dave, charlie, make_policy):
    policy = make_policy(rules={"min_citations": 2})
    with scope(tenant=policy.tenant):
        services.policy_update(policy=policy, actor=Actor.system("tests"), rules={"min_citations": 5})
    for user in (bob, dave):
        client.force_login(user)
        assert "Roll back to" not in client.get(f"/policies/{policy.pk}/history/").text
        assert client.post(f"/policies/{policy.pk}/rollback/", {"version": "1"}).status_code == 403
    client.force_login(charlie)
    assert client.post(f"/policies/{policy.pk}/rollback/", {"version": "1"}).status_code == 404
    with scopes_disabled():
        policy.refresh_from_db()
    assert policy.version == 2


def test_bad_version_on_the_page_says_so(client, alice, make_policy):
    policy = make_policy()
    client.force_login(alice)
    response = client.post(f"/policies/{policy.pk}/rollback/", {"version": "abc"}, follow=True)
    assert "Must be a whole number" in response.text
