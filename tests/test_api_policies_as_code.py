"""Policies as code over the API: plan (what would change, and what it would have decided on past
runs) and apply (all or nothing, versions, audit, 409 when the server moved on)."""

import jsonschema
import pytest
from api_support import LENIENT, STRICT, complete, create_policy, ground, post_json, row_counts, start_run
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from policies.models import Policy, PolicyVersion
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db
PLAN, APPLY = "/api/v1/policies/plan/", "/api/v1/policies/apply/"


def file_of(policy: dict, **changes) -> dict:
    """A policy as a file holds it (what `groundrule policies pull` writes)."""
    body = {key: policy[key] for key in ("name", "description", "category", "mode", "enabled", "rules")}
    body["scope"] = {"agents": policy["scope"]["agents"]}
    return {**body, **changes}


def key_client(tenant, scope: str) -> APIClient:
    _, raw = tenant_services.api_key_create(tenant=tenant, name=f"{scope} key", actor=Actor.system(), scope=scope)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def lenient(api):
    return create_policy(api, name="Lenient RAG", rules=LENIENT, agents=[])


@pytest.fixture
def history(api, lenient):
    """Three completed runs with scores 0.9, 0.65 and 0.5 under the lenient policy (min score 0.6)."""
    runs = []
    for score in (0.9, 0.65, 0.5):
        run = start_run(api, agent_name="support-bot")
        ground(api, run, grounding_scores=[score], citations=["a"])
        complete(api, run, output="Answer")
        runs.append(run)
    return runs


def test_plan_of_the_pulled_policies_changes_nothing(api, lenient):
    body = post_json(api, PLAN, {"policies": [file_of(lenient)]}).json()
    assert body["changes"] == {"create": 0, "update": 0, "delete": 0, "unchanged": 1}
    assert body["changed"] is False and body["impact"] is None and body["replay"] is None
    assert body["policies"][0]["action"] == "unchanged" and body["policies"][0]["diff"] == []
    assert body["expected_versions"] == {"Lenient RAG": 1}


def test_plan_shows_a_threshold_change_and_the_decisions_it_would_turn(api, lenient, history):
    edited = file_of(lenient, rules={**LENIENT, "min_grounding_score": 0.7})
    before = row_counts()
    response = post_json(api, PLAN, {"policies": [edited], "replay_days": 7})
    assert response.status_code == 200, response.content
    body = response.json()
    assert row_counts() == before
    planned = body["policies"][0]
    assert planned["action"] == "update" and planned["current_version"] == 1
    assert planned["diff"] == [{"field": "rules.min_grounding_score", "before": 0.6, "after": 0.7}]
    # The 0.65 run's mid_execution turns from allow to warn; nothing else.
    assert planned["impact"]["changed_decisions"] == 1
    assert planned["impact"]["transitions"] == {"allow→warn": 1}
    assert planned["impact"]["examples"] == [
        {
            "run_id": history[1],
            "phase": "mid_execution",
            "before": "allow",
            "after": "warn",
            "reason": "Grounding score (0.65) below threshold (0.7)",
        }
    ]
    # The same candidate through the replay endpoint turns the same decisions.
    replay = post_json(
        api,
        "/api/v1/policies/replay/",
        {"policy_id": lenient["id"], "policy": {"category": "grounding", "rules": edited["rules"]}},
    ).json()
    assert [(c["run_id"], c["phase"], c["before"], c["after"]) for c in replay["changed"]] == [
        (e["run_id"], e["phase"], e["before"], e["after"]) for e in planned["impact"]["examples"]
    ]
    assert body["impact"] == planned["impact"]
    assert body["replay"]["runs"] == 3 and body["replay"]["reports"] == 3 and body["replay"]["sampled"] is False


def test_plan_replays_each_change_alone_and_all_together(api, lenient, history):
    strict = {"name": "Strict", "category": "grounding", "rules": {"min_grounding_score": 0.95}}
    edited = file_of(lenient, rules={**LENIENT, "min_grounding_score": 0.7})
    body = post_json(api, PLAN, {"policies": [edited, strict]}).json()
    by_name = {p["name"]: p for p in body["policies"]}
    assert by_name["Strict"]["action"] == "create"
    assert by_name["Strict"]["diff"] == [
        {"field": "name", "before": None, "after": "Strict"},
        {"field": "category", "before": None, "after": "grounding"},
        {"field": "mode", "before": None, "after": "enforce"},
        {"field": "enabled", "before": None, "after": True},
        {"field": "rules.min_grounding_score", "before": None, "after": 0.95},
    ]
    # Strict alone warns on every report under 0.95 (0.9, 0.65, 0.5 → the 0.5 one warns already).
    assert by_name["Strict"]["impact"]["transitions"] == {"allow→warn": 2}
    assert by_name["Lenient RAG"]["impact"]["transitions"] == {"allow→warn": 1}
    assert body["impact"]["transitions"] == {"allow→warn": 2}


def test_a_disabled_or_shadow_file_is_replayed_as_deciding_nothing(api, lenient, history):
    body = post_json(api, PLAN, {"policies": [file_of(lenient, mode="shadow")]}).json()
    assert body["policies"][0]["diff"] == [{"field": "mode", "before": "enforce", "after": "shadow"}]
    # The lenient policy warned on the 0.5 report: in shadow mode that decision would allow.
    assert body["impact"]["transitions"] == {"warn→allow": 1}


def test_plan_with_replay_days_zero_replays_nothing(api, lenient, history):
    body = post_json(api, PLAN, {"policies": [file_of(lenient, enabled=False)], "replay_days": 0}).json()
    assert body["changed"] is True and body["replay"] is None and body["policies"][0]["impact"] is None


def test_plan_samples_the_latest_runs_beyond_the_report_cap(api, lenient, history, settings):
    settings.POLICY_PLAN_MAX_REPORTS = 2
    body = post_json(api, PLAN, {"policies": [file_of(lenient, rules={**LENIENT, "min_grounding_score": 0.7})]}).json()
    assert body["replay"]["sampled"] is True and body["replay"]["reports_in_window"] == 3
    assert body["replay"]["reports"] == 2 and body["replay"]["max_reports"] == 2


def test_plan_refuses_replay_days_beyond_the_maximum(api, lenient):
    response = post_json(api, PLAN, {"policies": [file_of(lenient)], "replay_days": 31, "prun": True})
    assert response.status_code == 400
    assert response.json() == {"prun": ["Unknown field."], "replay_days": ["Must be a whole number between 0 and 30."]}


@pytest.mark.parametrize("path", [PLAN, APPLY])
def test_bad_files_are_refused_naming_the_file_and_the_field(api, lenient, path):
    files = [
        file_of(lenient, rules={"min_grounding_score": 1.5, "min_citation": 1}),
        {"name": "Other", "category": "groundedness"},
        {"name": "Lenient RAG", "category": "grounding"},
        {"category": "grounding", "enabled": "yes"},
    ]
    before = row_counts()
    response = post_json(api, path, {"policies": files})
    assert response.status_code == 400
    assert response.json() == {
        "policies": [
            {
                "index": 0,
                "name": "Lenient RAG",
                "field": "rules.min_grounding_score",
                "message": "Must be a number between 0.0 and 1.0.",
            },
            {"index": 0, "name": "Lenient RAG", "field": "rules.min_citation", "message": "Unknown rule."},
            {
                "index": 1,
                "name": "Other",
                "field": "category",
                "message": "Unknown category 'groundedness'. Available: grounding.",
            },
            {"index": 3, "name": None, "field": "name", "message": "This field is required."},
            {"index": 3, "name": None, "field": "enabled", "message": "Must be true or false."},
        ]
    }
    assert row_counts() == before


@pytest.mark.parametrize("path", [PLAN, APPLY])
def test_a_duplicate_name_is_refused(api, path):
    files = [{"name": "Twice", "category": "grounding"}, {"name": "Twice ", "category": "grounding"}]
    response = post_json(api, path, {"policies": files})
    assert response.status_code == 400
    assert response.json() == {
        "policies": [
            {
                "index": 1,
                "name": "Twice ",
                "field": "name",
                "message": "Another policy of this request (number 1) has this name.",
                "duplicate_of": 0,
            }
        ]
    }
    with scopes_disabled():
        assert not Policy.objects.exists()


def test_apply_makes_a_version_and_an_audit_entry_per_change_then_is_a_no_op(api, acme, lenient, acme_key):
    edited = file_of(lenient, rules={**LENIENT, "min_grounding_score": 0.7})
    new = {"name": "Strict", "category": "grounding", "rules": STRICT}
    plan = post_json(api, PLAN, {"policies": [edited, new]}).json()
    response = post_json(api, APPLY, {"policies": [edited, new], "expected_versions": plan["expected_versions"]})
    assert response.status_code == 200, response.content
    assert response.json()["changes"] == {"create": 1, "update": 1, "delete": 0, "unchanged": 0}
    with scopes_disabled():
        policy = Policy.objects.get(name="Lenient RAG")
        assert policy.version == 2 and policy.rules["min_grounding_score"] == 0.7 and policy.managed_by_code
        assert Policy.objects.get(name="Strict").managed_by_code
        events = list(AuditEvent.objects.filter(tenant=acme, action__startswith="policies.policy.").order_by("id"))
        prefix = acme_key[1][:8]
        assert [(e.action, e.object_repr, e.after["source"]) for e in events[-2:]] == [
            ("policies.policy.updated", "Lenient RAG", "apply"),
            ("policies.policy.created", "Strict", "apply"),
        ]
        assert events[-1].actor_label.startswith("api-key:") and prefix.startswith(events[-1].actor_label[8:12])
        versions, audit = PolicyVersion.objects.count(), AuditEvent.objects.count()
    again = post_json(api, APPLY, {"policies": [edited, new]})
    assert again.json()["changed"] is False
    assert again.json()["changes"] == {"create": 0, "update": 0, "delete": 0, "unchanged": 2}
    with scopes_disabled():
        assert (PolicyVersion.objects.count(), AuditEvent.objects.count()) == (versions, audit)


def test_apply_adopts_unchanged_policies_without_a_version(api, acme, lenient):
    response = post_json(api, APPLY, {"policies": [file_of(lenient)]})
    assert response.json()["changed"] is False
    with scopes_disabled():
        policy = Policy.objects.get(name="Lenient RAG")
        assert policy.managed_by_code and policy.version == 1
        assert AuditEvent.objects.filter(tenant=acme).first().action == "policies.policy.managed_by_code"


def test_apply_refuses_with_409_when_a_policy_moved_since_the_plan(api, lenient):
    edited = file_of(lenient, rules={**LENIENT, "min_grounding_score": 0.7})
    plan = post_json(api, PLAN, {"policies": [edited, {"name": "New", "category": "grounding"}]}).json()
    assert plan["expected_versions"] == {"Lenient RAG": 1, "New": None}
    api.patch(f"/api/v1/policies/{lenient['id']}/", {"description": "edited in the dashboard"}, format="json")
    before = row_counts()
    files = [edited, {"name": "New", "category": "grounding"}]
    response = post_json(api, APPLY, {"policies": files, "expected_versions": plan["expected_versions"]})
    assert response.status_code == 409
    assert response.json()["detail"] == "Changed since the plan: “Lenient RAG”. Nothing was applied; run plan again."
    assert response.json()["policies"] == [{"name": "Lenient RAG", "expected_version": 1, "current_version": 2}]
    assert row_counts() == before


def test_prune_deletes_only_the_policies_no_file_names(api, lenient):
    create_policy(api, name="Gone", rules=STRICT)
    plan = post_json(api, PLAN, {"policies": [file_of(lenient)], "prune": True}).json()
    assert [(p["name"], p["action"], p["index"]) for p in plan["policies"]] == [
        ("Lenient RAG", "unchanged", 0),
        ("Gone", "delete", None),
    ]
    without_prune = post_json(api, APPLY, {"policies": [file_of(lenient)]}).json()
    assert without_prune["changes"]["delete"] == 0
    applied = post_json(api, APPLY, {"policies": [file_of(lenient)], "prune": True}).json()
    assert applied["changes"] == {"create": 0, "update": 0, "delete": 1, "unchanged": 1}
    with scopes_disabled():
        assert list(Policy.objects.values_list("name", flat=True)) == ["Lenient RAG"]
        assert AuditEvent.objects.filter(action="policies.policy.deleted").get().after == {"source": "apply"}


def test_a_read_key_can_plan_but_not_apply(acme, lenient):
    reader = key_client(acme, "read")
    assert post_json(reader, PLAN, {"policies": [file_of(lenient, enabled=False)]}).status_code == 200
    response = post_json(reader, APPLY, {"policies": [file_of(lenient, enabled=False)]})
    assert response.status_code == 403
    assert response.json()["detail"] == "This needs an API key with the admin scope; this key has the read scope."
    agent = key_client(acme, "agent")
    assert post_json(agent, PLAN, {"policies": []}).status_code == 403
    with scopes_disabled():
        assert Policy.objects.get().enabled is True


def test_another_tenants_policies_are_neither_planned_nor_applied(api, other_api, lenient, history):
    # globex's files name acme's policy: to globex it is a new policy, and prune never sees acme's.
    plan = post_json(other_api, PLAN, {"policies": [file_of(lenient)], "prune": True}).json()
    assert [(p["name"], p["action"], p["id"]) for p in plan["policies"]] == [("Lenient RAG", "create", None)]
    assert plan["replay"]["runs"] == 0
    assert post_json(other_api, APPLY, {"policies": [], "prune": True}).json()["changes"]["delete"] == 0
    moved = post_json(other_api, APPLY, {"policies": [], "expected_versions": {"Lenient RAG": 1}})
    assert moved.status_code == 409
    with scopes_disabled():
        assert Policy.objects.filter(name="Lenient RAG").count() == 1


def test_the_policy_file_schema_accepts_a_pulled_file_and_refuses_a_bad_rule(client, lenient):
    response = client.get("/api/v1/schema/policy-file.json")
    assert response.status_code == 200
    schema = response.json()
    jsonschema.validate(file_of(lenient), schema)
    rule = schema["allOf"][0]["then"]["properties"]["rules"]["anyOf"][0]["properties"]["min_grounding_score"]
    assert rule["type"] == ["number", "null"] and rule["maximum"] == 1.0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(file_of(lenient, rules={"min_grounding_score": 1.5}), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(file_of(lenient, rules={"min_citation": 1}), schema)
