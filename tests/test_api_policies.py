"""Policies over the API: create, read, list, replace (PUT), change (PATCH), delete.

Every change writes a PolicyVersion snapshot and an audit event, and the next decision uses it.
"""

from datetime import datetime

import pytest
from api_support import LENIENT, STRICT, create_policy, ground, post_json, start_run
from django_scopes import scopes_disabled

from governance.models import Evaluation
from policies.categories.grounding import GROUNDING_RULES
from policies.models import Policy, PolicyVersion
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

POLICY_KEYS = {
    "id",
    "name",
    "description",
    "category",
    "rules",
    "effective_rules",
    "scope",
    "enabled",
    "mode",
    "version",
    "created_at",
    "updated_at",
}
DEFAULTS = {spec.name: spec.default for spec in GROUNDING_RULES}


def _versions(policy_id: int) -> list[tuple[int, str]]:
    with scopes_disabled():
        return list(PolicyVersion.objects.filter(policy_ref=policy_id).order_by("id").values_list("version", "change"))


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_admin_creates_the_seed_strict_policy(api):
    response = post_json(
        api,
        "/api/v1/policies/",
        {
            "name": "Strict Research Grounding",
            "category": "grounding",
            "rules": STRICT,
            "scope": {"agents": ["research-agent"]},
            "enabled": True,
        },
    )

    assert response.status_code == 201
    body = response.json()
    assert set(body) == POLICY_KEYS
    assert body["name"] == "Strict Research Grounding"
    assert body["description"] == ""
    assert body["category"] == "grounding"
    assert body["rules"] == STRICT
    assert body["scope"] == {"agents": ["research-agent"]}
    assert body["enabled"] is True
    assert body["version"] == 1
    assert body["created_at"] == body["updated_at"]
    assert _versions(body["id"]) == [(1, "created")]


def test_effective_rules_fill_every_default_the_admin_left_out(api):
    body = create_policy(api, rules={"min_citations": 2})

    assert body["rules"] == {"min_citations": 2}
    assert body["effective_rules"] == {**DEFAULTS, "min_citations": 2}
    # docs/grounding-policies.md: grounding defaults to warn, max_unsupported_claims to no limit.
    assert body["effective_rules"]["action_on_violation"] == "warn"
    assert body["effective_rules"]["max_unsupported_claims"] is None
    assert body["effective_rules"]["min_grounding_score"] == 0.7
    assert body["effective_rules"]["score_eval_mode"] == "all"
    assert body["effective_rules"]["score_top_n"] == 3
    assert body["effective_rules"]["llm_grounding_model"] == "gpt-4o-mini"


def test_policy_without_rules_or_scope_applies_defaults_to_every_agent(api):
    response = post_json(api, "/api/v1/policies/", {"name": "Defaults", "category": "grounding"})

    assert response.status_code == 201
    body = response.json()
    assert body["rules"] == {}
    assert body["effective_rules"] == DEFAULTS
    assert body["scope"] == {"agents": []}
    assert body["enabled"] is True


def test_integer_rules_come_back_as_integers_and_numbers_as_floats(api):
    body = create_policy(api, rules={"min_citations": 3, "min_grounding_score": 1, "score_top_n": 5})

    assert body["rules"]["min_citations"] == 3 and isinstance(body["rules"]["min_citations"], int)
    assert body["rules"]["min_grounding_score"] == 1.0 and isinstance(body["rules"]["min_grounding_score"], float)


def test_get_returns_the_policy(api):
    created = create_policy(api, description="For the research agents")

    response = api.get(f"/api/v1/policies/{created['id']}/")

    assert response.status_code == 200
    assert response.json() == created


def test_list_shows_every_policy_of_the_tenant(api):
    ids = {create_policy(api, name=f"Policy {n}")["id"] for n in range(3)}

    response = api.get("/api/v1/policies/")

    assert response.status_code == 200
    assert {p["id"] for p in response.json()["results"]} == ids
    assert all(set(p) == POLICY_KEYS for p in response.json()["results"])


def test_list_filters_by_enabled(api):
    on = create_policy(api, name="On")
    off = create_policy(api, name="Off", enabled=False)

    enabled = api.get("/api/v1/policies/?enabled=true").json()["results"]
    disabled = api.get("/api/v1/policies/?enabled=false").json()["results"]

    assert [p["id"] for p in enabled] == [on["id"]]
    assert [p["id"] for p in disabled] == [off["id"]]


def test_put_replaces_the_whole_policy(api):
    created = create_policy(api, rules=STRICT, agents=["research-*"], description="old")

    response = api.put(
        f"/api/v1/policies/{created['id']}/",
        {"name": "Renamed", "category": "grounding", "rules": {"min_citations": 3}},
        format="json",
    )

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == created["id"]
    assert body["name"] == "Renamed"
    # PUT replaces: what the body leaves out goes back to its default.
    assert body["rules"] == {"min_citations": 3}
    assert body["effective_rules"] == {**DEFAULTS, "min_citations": 3}
    assert body["scope"] == {"agents": []}
    assert body["description"] == ""
    assert body["enabled"] is True
    assert body["version"] == 2
    assert body["created_at"] == created["created_at"]
    assert _when(body["updated_at"]) > _when(created["updated_at"])
    assert _versions(created["id"]) == [(1, "created"), (2, "updated")]


def test_put_needs_name_and_category(api):
    created = create_policy(api)

    response = api.put(f"/api/v1/policies/{created['id']}/", {"rules": {}}, format="json")

    assert response.status_code == 400
    assert set(response.json()) == {"name", "category"}
    assert api.get(f"/api/v1/policies/{created['id']}/").json() == created


def test_patch_changes_only_the_fields_given(api):
    created = create_policy(api, rules=STRICT, agents=["research-agent"])

    response = api.patch(f"/api/v1/policies/{created['id']}/", {"description": "Now documented"}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["description"] == "Now documented"
    assert body["rules"] == STRICT
    assert body["scope"] == {"agents": ["research-agent"]}
    assert body["version"] == 2


def test_patch_rules_replaces_the_rules_object(api):
    created = create_policy(api, rules=STRICT)

    body = api.patch(f"/api/v1/policies/{created['id']}/", {"rules": LENIENT}, format="json").json()

    assert body["rules"] == LENIENT
    assert body["effective_rules"]["abstention_response"] is None


def test_disabling_and_enabling_are_versioned_as_such(api):
    created = create_policy(api)

    off = api.patch(f"/api/v1/policies/{created['id']}/", {"enabled": False}, format="json").json()
    on = api.patch(f"/api/v1/policies/{created['id']}/", {"enabled": True}, format="json").json()

    assert (off["enabled"], off["version"]) == (False, 2)
    assert (on["enabled"], on["version"]) == (True, 3)
    assert _versions(created["id"]) == [(1, "created"), (2, "disabled"), (3, "enabled")]


def test_patch_that_changes_nothing_keeps_the_version(api):
    created = create_policy(api, rules=STRICT)
    with scopes_disabled():
        audits = AuditEvent.objects.count()

    body = api.patch(f"/api/v1/policies/{created['id']}/", {"rules": STRICT, "enabled": True}, format="json").json()

    assert body["version"] == 1
    assert body["updated_at"] == created["updated_at"]
    assert _versions(created["id"]) == [(1, "created")]
    with scopes_disabled():
        assert AuditEvent.objects.count() == audits


def test_id_and_version_in_the_body_are_ignored(api):
    created = create_policy(api)

    body = api.patch(
        f"/api/v1/policies/{created['id']}/", {"id": 999, "version": 42, "description": "x"}, format="json"
    ).json()

    assert body["id"] == created["id"]
    assert body["version"] == 2


def test_delete_removes_the_policy_but_keeps_its_history(api):
    created = create_policy(api)

    response = api.delete(f"/api/v1/policies/{created['id']}/")

    assert response.status_code == 204
    assert api.get(f"/api/v1/policies/{created['id']}/").status_code == 404
    assert api.get("/api/v1/policies/").json()["results"] == []
    assert _versions(created["id"]) == [(1, "created"), (2, "deleted")]
    assert api.delete(f"/api/v1/policies/{created['id']}/").status_code == 404


def test_evaluations_outlive_their_deleted_policy(api):
    created = create_policy(api, rules=STRICT)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.42])

    api.delete(f"/api/v1/policies/{created['id']}/")

    with scopes_disabled():
        rows = list(Evaluation.objects.filter(run_id=run_id, phase="mid_execution"))
    assert [(e.policy_ref, e.policy_name, e.action) for e in rows] == [
        (created["id"], "Strict Research Grounding", "block")
    ]
    listed = api.get(f"/api/v1/evaluations/?run={run_id}&phase=mid_execution").json()["results"]
    assert [e["policy_id"] for e in listed] == [created["id"]]


def test_the_next_decision_uses_the_changed_policy(api):
    created = create_policy(api, rules={**STRICT, "action_on_violation": "warn"})
    run_id = start_run(api)
    assert ground(api, run_id, grounding_scores=[0.5]).json()["decision"]["action"] == "warn"

    api.patch(f"/api/v1/policies/{created['id']}/", {"rules": STRICT}, format="json")

    assert ground(api, run_id, grounding_scores=[0.5]).json()["decision"]["action"] == "block"


def test_a_disabled_policy_decides_nothing(api):
    created = create_policy(api, rules=STRICT)
    api.patch(f"/api/v1/policies/{created['id']}/", {"enabled": False}, format="json")
    run_id = start_run(api)

    decision = ground(api, run_id, grounding_scores=[0.1]).json()["decision"]

    assert decision["action"] == "allow"
    assert decision["evaluations"] == []


def test_a_deleted_policy_decides_nothing(api):
    created = create_policy(api, rules=STRICT)
    run_id = start_run(api)
    api.delete(f"/api/v1/policies/{created['id']}/")

    decision = ground(api, run_id, grounding_scores=[0.1]).json()["decision"]

    assert (decision["action"], decision["evaluations"]) == ("allow", [])


@pytest.mark.parametrize(
    "agents, agent_name, applies",
    [
        (["research-agent"], "research-agent", True),
        (["research-agent"], "billing-agent", False),
        (["research-*"], "research-agent-eu", True),
        (["research-*"], "billing-agent", False),
        ([], "anything", True),
        (["agent[1]"], "agent[1]", True),
    ],
)
def test_scope_decides_which_agents_a_policy_governs(api, agents, agent_name, applies):
    create_policy(api, rules=STRICT, agents=agents)
    run_id = start_run(api, agent_name=agent_name)

    decision = ground(api, run_id, grounding_scores=[0.1]).json()["decision"]

    assert decision["action"] == ("block" if applies else "allow")


def test_scope_drops_duplicate_agents(api):
    body = create_policy(api, agents=["research-agent", "research-agent", "qa-*"])

    assert body["scope"] == {"agents": ["research-agent", "qa-*"]}


def test_policy_rows_belong_to_the_key_tenant(api, acme):
    created = create_policy(api)

    with scopes_disabled():
        policy = Policy.objects.get(pk=created["id"])
    assert policy.tenant_id == acme.pk


def test_a_policy_read_from_the_api_can_be_put_back_unchanged(api):
    created = post_json(
        api, "/api/v1/policies/", {"name": "Round trip", "category": "grounding", "rules": {"min_citations": 2}}
    ).json()
    read = api.get(f"/api/v1/policies/{created['id']}/").json()
    assert {"created_at", "updated_at", "effective_rules", "id", "version"} <= set(read)

    answer = api.put(f"/api/v1/policies/{created['id']}/", read, format="json")

    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["rules"] == {"min_citations": 2} and body["name"] == "Round trip"
    assert body["created_at"] == read["created_at"]  # read-only fields sent back are ignored
