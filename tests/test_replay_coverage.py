"""What replay covers beyond the engine's mid_execution and after_workflow checks (issue 11 item 2):
before_workflow, citations resolved against retrieval spans, the score audit the engine read,
and judges re-thresholded from their stored outputs without calling a provider again."""

import pytest
from api_support import complete, create_policy, ground, post_json, start_run
from django_scopes import scopes_disabled
from fake_llm_server import FakeLLMServer
from test_api_citations_retrieval import PROVENANCE
from test_judges_integration import GROUNDED, SOURCES, UNGROUNDED, judge_rules, report, start, store_provider_secrets

from governance.models import Decision, GroundingReport
from policies.engine import PolicySpec
from policies.replay import Judged, ReportRow, RunRow, replay

pytestmark = pytest.mark.django_db
URL = "/api/v1/policies/replay/"

RETRIEVAL = {"kind": "retrieval", "name": "kb_search", "attributes": {"provenance": PROVENANCE}}
RESOLVE = {
    "citations_must_resolve": True,
    "min_grounding_score": None,
    "min_citations": 0,
    "action_on_violation": "block",
}


def _stored(runs):
    counts = {"allow": 0, "warn": 0, "block": 0}
    with scopes_disabled():
        for decision in Decision.objects.filter(run_id__in=runs):
            counts[decision.action] += 1
    return counts


@pytest.fixture
def llm_server(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with FakeLLMServer() as server:
        yield server


def test_before_workflow_is_replayed_once_per_run(api):
    create_policy(api, name="Lenient", rules={"min_grounding_score": 0.1}, agents=[])
    run = start_run(api)
    ground(api, run, grounding_scores=[0.9], citations=["a"])
    body = post_json(api, URL, {"policy": {"category": "grounding"}}).json()
    assert body["before"] == _stored([run]) == {"allow": 2, "warn": 0, "block": 0}  # start + one report


def test_citations_resolve_against_retrieval_spans_as_they_did_live(api):
    policy = create_policy(api, name="Resolve", rules=RESOLVE, agents=[])
    run = start_run(api)
    assert post_json(api, f"/api/v1/runs/{run}/spans/", RETRIEVAL).status_code == 201
    cited = [{"source_id": "fed-2023", "quote": "raised its benchmark rate by 25 basis points"}]
    assert ground(api, run, citations=cited, output="The Fed raised by 25bp.").json()["decision"]["action"] == "allow"
    # Cited before anything was retrieved: unresolved live, and so in replay.
    early = start_run(api)
    assert ground(api, early, citations=["fed-2023"]).json()["decision"]["action"] == "block"
    assert post_json(api, f"/api/v1/runs/{early}/spans/", RETRIEVAL).status_code == 201
    complete(api, run, output="The Fed raised by 25bp.")
    body = post_json(api, URL, {"policy_id": policy["id"], "version": 1}).json()
    assert body["before"] == body["after"] == _stored([run, early])
    assert body["before"]["block"] == 1  # the early report only; the completed run resolves its citation


def test_the_score_audit_read_for_a_report_is_replayed(api, acme):
    create_policy(api, name="Scores", rules={"min_grounding_score": None}, agents=[])
    run = start_run(api)
    ground(api, run, grounding_scores=[0.9])
    with scopes_disabled():
        GroundingReport.objects.filter(run_id=run).update(score_inflation={"inflation": 0.4, "samples": 50})
    body = post_json(api, URL, {"policy": {"category": "grounding", "rules": {"max_score_inflation": 0.3}}}).json()
    assert body["after"]["warn"] == 1 and body["changed"][0]["reason"].startswith("Reported scores exceed")
    loose = post_json(api, URL, {"policy": {"category": "grounding", "rules": {"max_score_inflation": 0.5}}}).json()
    assert loose["changed_runs"] == 0


def test_a_report_keeps_the_score_audit_the_engine_read(api):
    create_policy(api, name="Inflation", rules={"max_score_inflation": 0.2}, agents=[])
    run = start_run(api)
    ground(api, run, grounding_scores=[0.9])
    with scopes_disabled():
        assert GroundingReport.objects.get(run_id=run).score_inflation == {"inflation": None, "samples": 0}


def test_the_llm_judge_is_rethresholded_from_its_stored_score_never_called_again(api, acme, make_policy, llm_server):
    store_provider_secrets(acme, llm_server)
    policy = make_policy(rules=judge_rules())
    run = start(api)
    assert report(api, run, GROUNDED)["action"] == "allow"  # judge 0.9
    assert report(api, run, UNGROUNDED)["action"] == "block"  # judge 0.2
    calls = len(llm_server.requests_for("openai"))

    same = post_json(api, URL, {"policy_id": policy.pk, "version": 1}).json()
    assert same["before"] == same["after"] == _stored([run])
    assert (same["judges_reused"], same["judges_missing"]) == (2, 0)  # one per judged decision and policy

    lower = {"category": "grounding", "rules": judge_rules(llm_grounding_threshold=0.1)}
    body = post_json(api, URL, {"policy_id": policy.pk, "policy": lower}).json()
    assert body["before"]["block"] == 1 and body["after"]["block"] == 0
    assert body["changed"][0]["before"] == "block" and body["changed"][0]["after"] == "allow"

    higher = {"category": "grounding", "rules": judge_rules(llm_grounding_threshold=0.95)}
    assert post_json(api, URL, {"policy_id": policy.pk, "policy": higher}).json()["after"]["block"] == 2

    other_model = {"category": "grounding", "rules": judge_rules(llm_grounding_model="claude-haiku-4-5")}
    body = post_json(api, URL, {"policy_id": policy.pk, "policy": other_model}).json()
    assert body["judges_missing"] == 2  # another model's score is not this one's: left out, said so
    assert len(llm_server.requests_for("openai")) == calls  # replay never called the provider


VERIFIER_RULES = {
    "min_grounding_score": None,
    "min_citations": 0,
    "nli_check": True,
    "nli_phase": "after_workflow",
    "contradiction_action": "block",
    "unverifiable_action": "warn",
}
CONTRADICTING = "The Federal Reserve raised interest rates by 0.75 percent in July 2023."


def test_the_verifier_is_rethresholded_from_its_stored_claim_probabilities(api, make_policy):
    policy = make_policy(rules=VERIFIER_RULES)
    runs = []
    for output in (GROUNDED, CONTRADICTING):
        run = start(api)
        ground(api, run, sources=SOURCES, citations=["fed-2023"], output=output)
        complete(api, run, output=output)
        runs.append(run)
    with scopes_disabled():
        after = Decision.objects.get(run_id=runs[1], phase="after_workflow")
        claims = after.evaluations.get(source="verifier").metadata["verification"]["claims"]
    assert after.action == "block"
    assert {"probabilities", "thresholds_input"} <= set(claims[0])

    same = post_json(api, URL, {"policy_id": policy.pk, "version": 1}).json()
    assert same["before"] == same["after"] == _stored(runs)
    assert same["judges_reused"] == 2 and same["judges_missing"] == 0

    # Nothing can reach a probability above 1: no claim is contradicted, every one supported.
    lenient = {**VERIFIER_RULES, "contradiction_threshold": 1.0, "entailment_threshold": 0.0}
    body = post_json(api, URL, {"policy_id": policy.pk, "policy": {"category": "grounding", "rules": lenient}}).json()
    assert body["after"]["block"] == 0 and body["changed_runs"] == 1

    strict = {**VERIFIER_RULES, "entailment_threshold": 1.0, "max_unverifiable_ratio": 0.0}
    body = post_json(api, URL, {"policy_id": policy.pk, "policy": {"category": "grounding", "rules": strict}}).json()
    assert body["after"]["warn"] + body["after"]["block"] == 2  # the grounded answer's claims now fall short


# --- the pure replayer -----------------------------------------------------------------------------------


def _spec(policy_id=1, **rules):
    from policies.categories import get_category

    return PolicySpec(policy_id, "P", "grounding", 1, get_category("grounding").effective_rules(rules))


def test_a_judge_with_nothing_stored_is_left_out_of_both_sides():
    row = RunRow(1, "a", [ReportRow([0.9], [], [], None, "out", None, [])], judged={})
    spec = _spec(llm_grounding_check=True, min_grounding_score=None)
    summary = replay([row], before=[spec], after=[spec])
    assert summary.judges_missing == 1 and summary.before == {"allow": 2, "warn": 0, "block": 0}


def test_a_stored_score_of_the_same_model_and_criteria_serves_another_policy():
    stored = {("mid_execution", 0): Judged(llm=((7, "gpt-4o-mini", "", 0.4),))}
    row = RunRow(1, "a", [ReportRow([0.9], [], [], None, "out", None, [])], judged=stored)
    candidate = _spec(0, llm_grounding_check=True, llm_grounding_threshold=0.5, min_grounding_score=None)
    summary = replay([row], before=[], after=[candidate])
    assert summary.after["warn"] == 1 and summary.judges_reused == 1
    other_criteria = _spec(0, llm_grounding_check=True, llm_grounding_criteria="cite", min_grounding_score=None)
    assert replay([row], before=[], after=[other_criteria]).judges_missing == 1
