"""Shadow mode (issue 11 item 1): a shadow policy is evaluated and recorded on every call but never
changes the decision, the run's status or final action, and never answers with an abstention."""

import re

import pytest
from api_support import LENIENT, STRICT, complete, create_policy, ground, post_json, start_run
from django_scopes import scopes_disabled

from governance.models import Evaluation, Run
from policies.categories import get_category
from policies.engine import Evaluation as EngineEvaluation
from policies.engine import PolicySpec, RunState, combine, evaluate_phase

GROUNDING = get_category("grounding")
# Passes the lenient policy at mid_execution (0.65 >= 0.6), fails the strict one (< 0.8); no citations,
# so the lenient policy warns at after_workflow (fewer than 1) and the strict one blocks.
LOW = {"grounding_scores": [0.65], "output_confidence": 0.2}


def spec(pk, mode="enforce", **rules):
    return PolicySpec(pk, f"P{pk}", "grounding", 1, GROUNDING.effective_rules(GROUNDING.clean_rules(rules)), mode=mode)


# --- the pure engine -------------------------------------------------------------------------------


def test_the_engine_sets_shadow_evaluations_apart():
    enforced = spec(1, **LENIENT)
    shadow = spec(2, mode="shadow", **STRICT)
    state = RunState(grounding_scores=(0.65,))
    alone = evaluate_phase("mid_execution", [enforced], state)
    both = evaluate_phase("mid_execution", [enforced, shadow], state)
    assert (both.action, both.reason, both.evaluations, both.abstention_response) == (
        alone.action,
        alone.reason,
        alone.evaluations,
        alone.abstention_response,
    )
    assert both.action == "allow"
    assert [(e.policy_id, e.action, e.shadow) for e in both.shadow_evaluations] == [(2, "block", True)]
    body = both.to_dict()
    assert body["evaluations"] == alone.to_dict()["evaluations"]
    assert body["shadow_evaluations"][0]["shadow"] is True and body["shadow_evaluations"][0]["action"] == "block"
    assert "shadow_evaluations" not in alone.to_dict()


def test_only_shadow_policies_decide_as_if_there_were_none():
    decision = evaluate_phase("after_workflow", [spec(2, mode="shadow", **STRICT)], RunState())
    assert decision.action == "allow" and decision.reason == "No applicable policies"
    assert decision.abstention_response is None and decision.shadow_evaluations[0].action == "block"


def test_combine_keeps_a_shadow_judgement_out_of_the_decision():
    decision = evaluate_phase("mid_execution", [spec(1, **LENIENT)], RunState(grounding_scores=(0.9,)))
    judged = EngineEvaluation(
        3, "P3", "grounding", 1, "mid_execution", "block", "Judge says no", {}, "stop", "llm", True
    )
    again = combine("mid_execution", (*decision.all_evaluations, judged))
    assert again.action == "allow" and again.abstention_response is None
    assert again.shadow_evaluations == (judged,)


# --- the API ---------------------------------------------------------------------------------------


@pytest.fixture
def policies(api):
    lenient = create_policy(api, name="Lenient", rules=LENIENT)
    strict = create_policy(api, name="Strict shadow", rules=STRICT, mode="shadow")
    assert strict["mode"] == "shadow"
    return lenient, strict


def test_a_shadow_policy_never_changes_the_decision_or_the_run(api, policies):
    lenient, strict = policies
    run = start_run(api)
    body = ground(api, run, **LOW).json()
    decision = body["decision"]
    assert decision["action"] == "allow"
    assert "abstention_response" not in decision
    assert [e["policy_id"] for e in decision["evaluations"]] == [lenient["id"]]
    assert all("shadow" not in e for e in decision["evaluations"])
    assert [(e["policy_id"], e["action"], e["shadow"]) for e in decision["shadow_evaluations"]] == [
        (strict["id"], "block", True)
    ]

    done = complete(api, run, output="An answer.").json()
    assert done["decision"]["action"] == "warn"  # the lenient policy alone
    assert done["decision"]["shadow_evaluations"][0]["action"] == "block"
    with scopes_disabled():
        stored = Run.objects.get(pk=run)
        assert (stored.status, stored.final_action) != ("blocked", "block")
        assert stored.status == "completed"
        flags = list(Evaluation.objects.filter(run_id=run).order_by("id").values_list("policy_ref", "shadow"))
    assert (strict["id"], True) in flags and (lenient["id"], False) in flags
    assert all(shadow == (ref == strict["id"]) for ref, shadow in flags)


def test_the_same_call_without_the_shadow_policy_answers_the_same(api, policies):
    run = start_run(api)
    with_shadow = ground(api, run, **LOW).json()["decision"]
    post_json(api, f"/api/v1/policies/{policies[1]['id']}/", {})  # no-op; keep the policy
    api.patch(f"/api/v1/policies/{policies[1]['id']}/", {"enabled": False}, format="json")
    run = start_run(api)
    without = ground(api, run, **LOW).json()["decision"]
    with_shadow.pop("shadow_evaluations")
    assert with_shadow == without


def test_evaluations_api_filters_shadow(api, other_api, policies):
    run = start_run(api)
    ground(api, run, **LOW)
    enforced = api.get("/api/v1/evaluations/").json()["results"]
    shadow = api.get("/api/v1/evaluations/?shadow=true").json()["results"]
    assert enforced and all(e["shadow"] is False for e in enforced)
    assert shadow and all(e["shadow"] is True for e in shadow)
    assert {e["id"] for e in api.get("/api/v1/evaluations/?shadow=1").json()["results"]} == {e["id"] for e in shadow}
    assert {e["id"] for e in api.get("/api/v1/evaluations/?shadow=false").json()["results"]} == {
        e["id"] for e in enforced
    }
    bad = api.get("/api/v1/evaluations/?shadow=maybe")
    assert bad.status_code == 400 and "shadow" in bad.json()
    assert other_api.get("/api/v1/evaluations/?shadow=true").json()["results"] == []
    export = b"".join(api.get("/api/v1/evaluations/export?format=jsonl&shadow=true").streaming_content)
    assert export.count(b'"shadow":true') == len(shadow)


def test_bad_mode_is_a_400_naming_the_field(api):
    response = post_json(api, "/api/v1/policies/", {"name": "X", "category": "grounding", "mode": "loud"})
    assert response.status_code == 400 and "mode" in response.json()


# --- the pages -------------------------------------------------------------------------------------


def test_violations_page_lists_shadow_apart(client, alice, api, policies):
    run = start_run(api)
    ground(api, run, **LOW)
    complete(api, run, output="An answer.")
    client.force_login(alice)
    enforced = client.get("/violations/").text.split('id="violation-results"')[1]
    shadow = client.get("/violations/?shadow=1").text.split('id="violation-results"')[1]
    assert "Strict shadow" not in enforced and "Lenient" in enforced
    assert "Strict shadow" in shadow and "Lenient" not in shadow


def test_run_governance_tab_has_a_shadow_heading(client, alice, api, policies):
    run = start_run(api)
    ground(api, run, **LOW)
    client.force_login(alice)
    page = client.get(f"/runs/{run}/").text
    assert 'id="shadow-violations"' in page
    head, shadow_part = page.split('id="shadow-violations"', 1)
    assert "Strict shadow" not in head and "Strict shadow" in shadow_part


def test_overview_counts_leave_shadow_out(client, alice, api, policies):
    run = start_run(api)
    ground(api, run, **LOW)
    complete(api, run, output="An answer.")
    client.force_login(alice)
    html = client.get("/?period=24h").text

    def stat(label):
        return int(
            re.search(
                rf'<span class="gr-stat-label">{label}</span><span class="gr-stat-value">(\d+)</span>', html
            ).group(1)
        )

    with scopes_disabled():
        enforced_blocks = Evaluation.objects.filter(action="block", shadow=False).count()
        enforced_warns = Evaluation.objects.filter(action="warn", shadow=False).count()
        assert Evaluation.objects.filter(action="block", shadow=True).count() >= 2
    assert (stat("Warnings"), stat("Blocks")) == (enforced_warns, enforced_blocks) == (1, 0)


def test_the_editor_saves_a_policy_in_shadow_mode(client, alice, make_policy):
    policy = make_policy(name="Editable")
    client.force_login(alice)
    page = client.get(f"/policies/{policy.pk}/edit/").text
    assert 'name="mode"' in page
    data = {"name": "Editable", "description": "", "agents": "", "enabled": "on", "mode": "shadow"}
    for s in GROUNDING.rules:
        if s.type == "boolean":
            if s.default:
                data[f"rule_{s.name}"] = "on"
        else:
            data[f"rule_{s.name}"] = "" if s.default is None else str(s.default)
    assert client.post(f"/policies/{policy.pk}/edit/", data).status_code == 302
    with scopes_disabled():
        policy.refresh_from_db()
    assert policy.mode == "shadow"
    assert "Shadow" in client.get(f"/policies/{policy.pk}/").text


def test_a_shadow_policys_context_rules_decide_nothing(api):
    # Context rules say what reaches the model: a shadow policy's would be enforcing, not shadowing.
    create_policy(api, name="Attachments only", rules={"context_mode": "attachments_only"}, mode="shadow")
    body = {"agent_name": "research-agent", "retrieved_text": "Chunk text.", "prepared_documents": ["doc-1"]}
    decided = post_json(api, "/api/v1/grounding/decide/", body).json()
    assert decided["grounding_context"]["policy_id"] is None
    assert decided["grounding_context"]["rules"]["context_mode"] == "hybrid"
    assert decided["retrieved_text_for_prompt"] == "Chunk text."
    started = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()
    assert started["decision"]["grounding_context"]["policy_id"] is None


def test_the_trace_checks_scores_against_enforced_policies_only(client, alice, api, policies):
    # The trace marks each score pass/fail per policy: a shadow policy's threshold there reads as enforced.
    run = start_run(api)
    ground(api, run, **LOW)
    client.force_login(alice)
    html = client.get(f"/runs/{run}/?tab=trace").text
    timeline = html[html.index('<ol class="gr-timeline">') :]
    assert "Lenient" in timeline and "&lt; 0.8" not in timeline and "Strict shadow" not in timeline


def test_a_shadow_violations_page_says_it_was_not_enforced(client, alice, api, policies):
    # A shadow block's own page, and the list of the run's other evaluations, showed a bare "block".
    run = start_run(api)
    ground(api, run, **LOW)
    complete(api, run, output="An answer.")
    with scopes_disabled():
        shadow = Evaluation.objects.get(run_id=run, shadow=True, phase="mid_execution")
        enforced = Evaluation.objects.get(run_id=run, shadow=False, phase="after_workflow")
        shadow_rows = Evaluation.objects.filter(run_id=run, shadow=True).count()
    assert enforced.action == "warn"
    client.force_login(alice)
    assert "shadow policy: recorded, never enforced" in client.get(f"/violations/{shadow.pk}/").text
    page = client.get(f"/violations/{enforced.pk}/").text
    head, others = page.split('id="others-title"', 1)
    assert "never enforced" not in head
    assert others.count("shadow · not enforced") == shadow_rows
