"""The verifier's work budget (VERIFIER_MAX_WORK, judges/verifier/facts/work.py) and the check's in-flight
slots per key (GROUNDING_CHECK_MAX_IN_FLIGHT).

Characters do not bound the verifier's CPU: a claim of 2,900 characters dense with numbers (or names)
against an 8,000-character source as dense is within every character limit and held a web worker for
~10 s. The alignment's pairings are charged to a budget per call; a claim they do not fit is answered
``unverifiable`` with the reason pinned below, and a warning counts such claims. Within the budget,
verdicts are the verifier's own.
"""

import json
import random
import time
from pathlib import Path

import pytest
from django_scopes import scopes_disabled

from governance.models import Evaluation
from judges.budget import budgeted_check
from judges.verification import config_for
from judges.verifier import check_grounding
from tenants.models import ApiKey
from tenants.throttling import check_slot

NOT_CHECKED = "not checked: over the request's verifier budget (VERIFIER_MAX_WORK)"
LEFT_UNCHECKED = (
    "Verifier left 1 of 1 claims unchecked: their fact alignment is over the request's work budget (VERIFIER_MAX_WORK)."
)
FACT = "Premium users get 1,000 requests per minute."

# The finding's inputs: 11 KB bodies, within every character limit.
DENSE_NUMBERS = {
    "text": "The hospital has " + "350 beds, " * 290,
    "sources": [{"id": "s", "text": "… 420 beds and " * 615}],
}
DENSE_NAMES = {
    "text": "Alice Smith met " + "Bob Jones and Carol King, " * 110 + ".",
    "sources": [{"id": "s", "text": "Alice Smith met " + "Dan Brown and Eve Adams, " * 320 + "."}],
}


def cpu_seconds(call):
    started = time.process_time()
    result = call()
    return result, time.process_time() - started


@pytest.fixture
def warm(api):
    """The models loaded before anything is timed."""
    api.post("/api/v1/grounding/check/", {"text": FACT, "sources": [FACT]}, format="json")
    return api


@pytest.mark.django_db
@pytest.mark.parametrize("body", [DENSE_NUMBERS, DENSE_NAMES], ids=["numbers", "names"])
def test_a_check_dense_with_values_is_answered_unchecked_within_half_a_second_of_cpu(warm, body):
    response, cpu = cpu_seconds(lambda: warm.post("/api/v1/grounding/check/", body, format="json"))
    assert response.status_code == 200, response.content
    answer = response.json()
    assert [(c["verdict"], c["reason"]) for c in answer["claims"]] == [("unverifiable", NOT_CHECKED)]
    assert LEFT_UNCHECKED in answer["warnings"]
    assert answer["grounded"] is False and answer["reason_code"] == "GROUNDING_UNVERIFIABLE"
    assert cpu < 0.5, f"{cpu:.2f} s of CPU"  # ~10 s before the budget


@pytest.mark.django_db
def test_a_small_claim_after_a_refused_one_is_still_checked(warm):
    dense = DENSE_NUMBERS["sources"][0]["text"][:7_000]  # both sources within VERIFIER_MAX_SOURCE_CHARS
    body = {"text": DENSE_NUMBERS["text"] + ".\n\n" + FACT, "sources": [dense, FACT]}
    answer = warm.post("/api/v1/grounding/check/", body, format="json").json()
    assert [c["verdict"] for c in answer["claims"]] == ["unverifiable", "supported"]
    assert answer["claims"][0]["reason"] == NOT_CHECKED
    assert (
        "Verifier left 1 of 2 claims unchecked: their fact alignment is over the request's work budget "
        "(VERIFIER_MAX_WORK)." in answer["warnings"]
    )


def _pairs(n: int) -> list[dict]:
    devset = Path(__file__).resolve().parents[1] / "verifier_lab" / "data" / "devset.jsonl"
    rows = [json.loads(line) for line in devset.open()]
    random.Random(45).shuffle(rows)
    return rows[:n]


def test_within_the_work_budget_the_verdicts_are_the_verifiers_own():
    config = config_for()
    for row in _pairs(40):
        budgeted, warnings = budgeted_check(row["claim"], row["sources"], config)
        unbounded = check_grounding(row["claim"], row["sources"], config)
        assert budgeted.to_dict() == unbounded.to_dict(), row["id"]
        assert not any("VERIFIER_MAX_WORK" in w for w in warnings)


def test_a_smaller_budget_leaves_the_claims_it_cannot_afford_unchecked(settings):
    settings.VERIFIER_MAX_WORK = 1
    result, warnings = budgeted_check(FACT, [FACT], config_for())
    assert [(c.verdict, c.reason) for c in result.claims] == [("unverifiable", NOT_CHECKED)]
    assert warnings == [LEFT_UNCHECKED]


@pytest.mark.django_db
def test_the_inline_verifier_on_a_report_is_bounded_by_the_same_budget(api, make_policy):
    rules = {"min_grounding_score": 0.0, "action_on_violation": "warn", "nli_check": True}
    make_policy(rules={**rules, "nli_phase": "mid_execution"})
    run_id = api.post("/api/v1/runs/", {"agent_name": "a"}, format="json").json()["id"]
    report = {"grounding_scores": [0.9], "output": DENSE_NUMBERS["text"], "sources": DENSE_NUMBERS["sources"]}
    response, cpu = cpu_seconds(lambda: api.post(f"/api/v1/runs/{run_id}/grounding/", report, format="json"))
    assert response.status_code == 200, response.content
    with scopes_disabled():
        verification = Evaluation.objects.get(run_id=run_id, source="verifier").metadata["verification"]
    assert [(c["verdict"], c["reason"]) for c in verification["claims"]] == [("unverifiable", NOT_CHECKED)]
    assert LEFT_UNCHECKED in verification["budget_warnings"]
    assert cpu < 1.0, f"{cpu:.2f} s of CPU"  # the report's own writes besides the check


@pytest.mark.django_db
def test_the_consistency_check_on_complete_stops_at_the_budget_and_says_so(api, make_policy):
    make_policy(rules={"factual_consistency_check": True, "action_on_violation": "warn"})
    run_id = api.post("/api/v1/runs/", {"agent_name": "a"}, format="json").json()["id"]
    output = "The hospital has " + "350 beds, " * 290 + ".\n\nThe hospital has " + "420 beds, " * 290 + "."
    response, cpu = cpu_seconds(lambda: api.post(f"/api/v1/runs/{run_id}/complete/", {"output": output}, format="json"))
    assert response.status_code == 200, response.content
    consistency = [e for e in response.json()["decision"]["evaluations"] if e["metadata"].get("check") == "consistency"]
    assert consistency[0]["metadata"]["warnings"] == [
        "Consistency check stopped comparing claims at the request's work budget (VERIFIER_MAX_WORK)."
    ]
    assert cpu < 1.0, f"{cpu:.2f} s of CPU"


def test_the_score_audit_is_bounded_by_the_work_budget():
    from judges.support import measure_support

    measure, cpu = cpu_seconds(lambda: measure_support(DENSE_NUMBERS["text"], DENSE_NUMBERS["sources"]))
    assert measure.claims[0]["reason"] == NOT_CHECKED
    assert measure.warnings == (LEFT_UNCHECKED,)
    assert cpu < 2.0, f"{cpu:.2f} s of CPU"  # two verifier passes (overall, per source), ~20 s before


@pytest.mark.django_db
def test_a_key_with_its_checks_in_flight_gets_429_with_retry_after(api, other_api, settings):
    settings.GROUNDING_CHECK_MAX_IN_FLIGHT = 2
    key = ApiKey.objects.with_scopes_disabled().get(tenant__slug="acme")
    body = {"text": FACT, "sources": [FACT]}
    with check_slot(key, 2) as first, check_slot(key, 2) as second:
        assert first and second
        refused = api.post("/api/v1/grounding/check/", body, format="json")
        assert other_api.post("/api/v1/grounding/check/", body, format="json").status_code == 200
    assert refused.status_code == 429
    assert refused["Retry-After"] == "1"
    assert refused.json()["detail"] == (
        "This API key already has 2 grounding checks in flight, the most it may have at once "
        "(GROUNDING_CHECK_MAX_IN_FLIGHT); retry when one has finished."
    )
    assert api.post("/api/v1/grounding/check/", body, format="json").status_code == 200  # slots released
