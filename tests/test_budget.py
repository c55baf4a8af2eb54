"""Bounded work per request (issue 14 item 8): judges/budget.py at the check endpoint and in policies.

Hard limit: a 413 naming it, before any verifier work. Soft budget: the claims left over are
``unverifiable`` and a warning names the limit. Under eight of the finding's ~1 MB checks in
parallel, a real threaded server still answers /api/v1/ping/ within 100 ms.
"""

import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django_scopes import scopes_disabled
from server_process import ServerProcess

from governance.models import Evaluation
from judges.budget import Budget, budgeted_check
from judges.verification import config_for

FACT = "Premium users get 1,000 requests per minute."


def heavy_body() -> dict:
    # The finding: 50 sources of 19,000 characters (~1 MB) and a long text.
    source = ("Premium users get 1,000 requests per minute. " * 430)[:19_000]
    return {"text": "Premium users get 1,000 requests per minute. " * 1000, "sources": [source] * 50}


@pytest.mark.django_db
def test_sources_over_the_hard_limit_are_a_413_naming_it(api, settings):
    settings.GROUNDING_MAX_SOURCE_CHARS = 1000
    response = api.post(
        "/api/v1/grounding/check/",
        {"text": FACT, "sources": ["x" * 600, "y" * 600]},
        format="json",
        HTTP_X_REQUEST_ID="req-413",
    )
    assert response.status_code == 413
    message = "The sources hold 1200 characters; the limit is 1000 (GROUNDING_MAX_SOURCE_CHARS)."
    assert response.json() == {"detail": message, "sources": [message], "request_id": "req-413"}


@pytest.mark.django_db
def test_the_findings_1mb_check_is_refused_before_its_body_is_read(api):
    response = api.post("/api/v1/grounding/check/", heavy_body(), format="json")
    assert response.status_code == 413
    assert "GROUNDING_CHECK_MAX_BODY_BYTES" in response.json()["body"][0]


@pytest.mark.django_db
def test_sources_over_the_default_character_limit_are_refused(api):
    response = api.post("/api/v1/grounding/check/", {"text": FACT, "sources": ["word " * 3999] * 6}, format="json")
    assert response.status_code == 413
    assert response.json()["sources"][0].endswith("the limit is 100000 (GROUNDING_MAX_SOURCE_CHARS).")


@pytest.mark.django_db
def test_claims_over_the_soft_budget_are_unverifiable_with_a_warning(api, settings):
    settings.VERIFIER_MAX_CLAIMS = 2
    text = f"{FACT} Premium users pay 20 dollars a month. Basic users get 100 requests per minute."
    response = api.post("/api/v1/grounding/check/", {"text": text, "sources": [FACT]}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["total_claims"] == 3
    assert body["claims"][0]["verdict"] == "supported"
    last = body["claims"][2]
    assert last["verdict"] == "unverifiable" and "VERIFIER_MAX_CLAIMS" in last["reason"]
    assert body["warnings"] == [
        "Verifier checked the first 2 of 3 claims; the other 1 are unverifiable (VERIFIER_MAX_CLAIMS)."
    ]


def test_claims_past_the_character_budget_are_unverifiable_with_a_warning():
    """A claim's alignment costs its values times each sentence's: one "sentence" of 2,000
    characters of numbers (a table flattened into the text) against a source as dense held a
    worker for minutes. The claims that fit are checked in order; one longer than the whole budget
    is never checked."""
    table = "The hospital has " + "350 beds, " * 30 + "."  # 318 characters of values
    text = f"{FACT} {table} Basic users get 100 requests per minute."
    budget = Budget(max_source_chars=8_000, max_claims=16, max_pairs=1_500, max_claim_chars=300)
    result, warnings = budgeted_check(text, [FACT], config_for(), budget)
    assert [c.verdict for c in result.claims] == ["supported", "unverifiable", "unverifiable"]
    assert result.claims[1].reason == "not checked: over the request's verifier budget (VERIFIER_MAX_CLAIM_CHARS)"
    assert result.claims[1].best_source is None
    assert warnings == [
        "Verifier checked the first 1 of 3 claims; the other 2 are unverifiable (VERIFIER_MAX_CLAIM_CHARS)."
    ]
    alone, warnings = budgeted_check(table, [FACT], config_for(), budget)
    assert [c.verdict for c in alone.claims] == ["unverifiable"] and alone.grounded is False
    assert warnings == [
        "Verifier checked the first 0 of 1 claims; the other 1 are unverifiable (VERIFIER_MAX_CLAIM_CHARS)."
    ]


@pytest.mark.django_db
def test_a_long_claim_of_values_is_answered_within_the_default_budget(api):
    """Through the endpoint with the default settings: a 20,000-character claim of numbers against a
    dense source is answered at once, unchecked, instead of holding the worker for minutes."""
    text = "The hospital has " + "350 beds, " * 2000 + "."
    source = "The hospital has " + "420 beds and " * 600 + "."
    started = time.monotonic()
    response = api.post("/api/v1/grounding/check/", {"text": text, "sources": [source]}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["claims"][0]["verdict"] == "unverifiable"
    assert "VERIFIER_MAX_CLAIM_CHARS" in body["claims"][0]["reason"]
    assert time.monotonic() - started < 30  # minutes before the budget; a bound, not a benchmark


def test_the_score_audit_measures_the_claims_within_the_character_budget(settings):
    """The score audit runs the verifier eleven times a report (judges/support.py): its claims are
    bounded as a check's are, and a report whose one claim is past the budget is not auditable."""
    from judges.support import measure_support

    settings.VERIFIER_MAX_CLAIM_CHARS = 300
    table = "The hospital has " + "350 beds, " * 30 + "."  # 318 characters
    sources = [{"id": "limits", "text": FACT}]
    measure = measure_support(f"{FACT} {table}", sources)
    assert measure.warnings == ("Score audit measured the first 1 of 2 claims (VERIFIER_MAX_CLAIM_CHARS).",)
    assert [c["claim"] for c in measure.claims] == [FACT] and measure.claims[0]["verdict"] == "supported"
    assert measure.overall == measure.per_source[0] and measure.overall > 0.5
    alone = measure_support(table, sources)
    assert alone.overall is None and alone.per_source == (None,) and alone.claims == ()
    within = measure_support(FACT, sources)
    assert within.warnings == () and within.overall == measure.overall


def test_long_sources_are_read_up_to_the_character_budget():
    filler = "Unrelated filler sentence number one. " * 100
    budget = Budget(max_source_chars=500, max_claims=50, max_pairs=10_000, max_claim_chars=10_000)
    result, warnings = budgeted_check(FACT, [filler + FACT], config_for(), budget)
    assert result.claims[0].verdict == "unverifiable"  # the supporting sentence was past the budget
    assert warnings == ["Verifier read only the first 500 characters of the sources (VERIFIER_MAX_SOURCE_CHARS)."]
    result, warnings = budgeted_check(FACT, [FACT + " " + filler], config_for(), budget)
    assert result.claims[0].verdict == "supported"


def test_pairs_budget_checks_fewer_claims_when_sources_are_long():
    sources = [" ".join(f"Sentence {i} about the weather today." for i in range(40))]
    text = " ".join(f"The value {i} is {i * 3} units." for i in range(10))
    result, warnings = budgeted_check(text, sources, config_for(), Budget(100_000, 50, 80, 10_000))
    assert sum(1 for c in result.claims if "VERIFIER_MAX_PAIRS" in c.reason) == 8
    assert "VERIFIER_MAX_PAIRS" in warnings[0]


def test_within_budget_the_result_is_the_verifiers_own():
    from judges.verifier import check_grounding

    text = f"{FACT} Basic users get 100 requests per minute."
    direct = check_grounding(text, [FACT], config_for())
    budgeted, warnings = budgeted_check(text, [FACT], config_for())
    assert warnings == [] and budgeted.to_dict() == direct.to_dict()


@pytest.mark.django_db
def test_policy_verifier_runs_within_the_budget(api, acme, make_policy, settings):
    settings.VERIFIER_MAX_CLAIMS = 1
    make_policy(
        rules={
            "min_grounding_score": 0.0,
            "action_on_violation": "warn",
            "nli_check": True,
            "nli_phase": "mid_execution",
        }
    )
    run_id = api.post("/api/v1/runs/", {"agent_name": "a"}, format="json").json()["id"]
    output = f"{FACT} Basic users get 100 requests per minute."
    response = api.post(
        f"/api/v1/runs/{run_id}/grounding/",
        {"grounding_scores": [0.9], "output": output, "sources": [{"id": "s", "text": FACT}]},
        format="json",
    )
    assert response.status_code == 200, response.content
    with scopes_disabled():
        verifier = Evaluation.objects.filter(run_id=run_id, source="verifier").first()
    assert verifier is not None
    verification = verifier.metadata["verification"]
    assert verification["claims"][1]["verdict"] == "unverifiable"
    assert "VERIFIER_MAX_CLAIMS" in verification["budget_warnings"][0]


def test_eight_heavy_checks_in_parallel_leave_ping_under_100ms(tmp_path):
    with ServerProcess(tmp_path) as server:
        headers = {"Authorization": f"Bearer {server.api_key('agent')}"}
        # Encoded once: eight client threads encoding 1 MB each would slow this process's pings too.
        body = json.dumps(heavy_body()).encode()
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as http:
            idle = []
            for _ in range(5):  # warm (the first request pays imports), and the figure without load
                started = time.perf_counter()
                http.get("/api/v1/ping/")
                idle.append(time.perf_counter() - started)

            def heavy(_):
                with httpx.Client(
                    base_url=server.url, headers={**headers, "Content-Type": "application/json"}, timeout=120
                ) as c:
                    return c.post("/api/v1/grounding/check/", content=body).status_code

            with ThreadPoolExecutor(8) as pool:
                futures = [pool.submit(heavy, i) for i in range(8)]
                time.sleep(0.05)
                pings = []
                while not all(f.done() for f in futures) or len(pings) < 5:
                    started = time.perf_counter()
                    assert http.get("/api/v1/ping/").status_code == 200
                    pings.append(time.perf_counter() - started)
                    time.sleep(0.02)
                statuses = [f.result() for f in futures]
    assert statuses == [413] * 8
    print(f"ping idle {[round(p * 1000) for p in idle]} ms; under load {[round(p * 1000) for p in pings]} ms")
    # The median, not the maximum: on a shared 2-core machine one ping in a few can lose the CPU to
    # another process whatever this server does (idle pings of 50+ ms were seen there too).
    assert statistics.median(pings) < 0.1, f"ping took {statistics.median(pings) * 1000:.0f} ms (median) under load"
    assert max(pings) < 1.0
