"""The local verifier as a policy check and as the on-demand check endpoint (docs/verifier.md)."""

import pytest
from django_scopes import scope

from governance.models import Evaluation

pytestmark = pytest.mark.django_db

SOURCE = {
    "id": "pricing",
    "text": "Premium users get 1,000 requests per minute. Free users get 100 requests per minute.",
}


def test_check_endpoint_returns_the_seed_shape(api):
    response = api.post(
        "/api/v1/grounding/check/",
        {
            "text": "The API rate limit is 1000 req/min for premium users.",
            "sources": ["Premium users get 1000 requests per minute."],
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) >= {
        "grounded",
        "claims",
        "total_claims",
        "supported_count",
        "contradicted_count",
        "unverifiable_count",
        "unverifiable_ratio",
        "summary",
    }
    assert body["grounded"] is True
    assert body["claims"][0]["verdict"] == "supported"
    assert body["claims"][0]["best_source"]["id"] == "source-0"
    assert body["summary"] == "1/1 claims supported"


def test_check_endpoint_finds_a_number_contradiction(api):
    body = api.post(
        "/api/v1/grounding/check/",
        {"text": "Premium users get 500 requests per minute.", "sources": [SOURCE]},
        format="json",
    ).json()
    assert body["contradicted_count"] == 1
    assert body["claims"][0]["verdict"] == "contradicted"
    assert body["claims"][0]["best_source"]["id"] == "pricing"


@pytest.mark.parametrize(
    "text,source",
    [
        # a number too long for a float reads as infinity: it is near nothing but itself
        ("The bag weighs " + "9" * 400 + " kg.", "The bag weighs 3 lb."),
        ("The bag weighs 3 lb.", "The bag weighs " + "9" * 400 + " kg."),
        ("The bag weighs 1" + "0" * 400 + ".5 kg.", "The bag weighs 3 lb."),
    ],
)
def test_check_endpoint_reads_a_number_past_a_float_as_a_conflict_not_a_500(api, text, source):
    response = api.post("/api/v1/grounding/check/", {"text": text, "sources": [source]}, format="json")
    assert response.status_code == 200, response.content[:300]
    assert [c["verdict"] for c in response.json()["claims"]] == ["contradicted"]


def test_check_endpoint_answers_a_count_and_rate_beside_a_company_name_not_a_500(api):
    """A fifth-round training pair once made the verifier raise (a count times a rate "per seat"
    compared with an entity's name: facts/reckoning.py); the check answers with a verdict."""
    sources = [
        "Hi, this is Hollis from billing at Quarry Analytics. We've moved your team from monthly billing to "
        "annual billing on the Team plan, effective 1 July. Your card will be charged $2,160 today for 12 seats.",
        "Quarry Analytics pricing. Team plan: $20 per seat per month billed monthly, or $15 per seat per month "
        "billed annually.",
    ]
    text = "The $2,160 charge matches Quarry's annual rate of $15 per seat for 12 seats."
    response = api.post("/api/v1/grounding/check/", {"text": text, "sources": sources}, format="json")
    assert response.status_code == 200, response.content[:300]
    assert response.json()["total_claims"] == 1


def test_check_endpoint_without_sources_is_a_no_op(api):
    body = api.post("/api/v1/grounding/check/", {"text": "Anything at all.", "sources": []}, format="json").json()
    assert body["reason_code"] == "GROUNDING_NO_SOURCES"
    assert body["claims"] == []


@pytest.mark.parametrize(
    "payload,field",
    [
        ({"sources": []}, "text"),
        ({"text": "x"}, "sources"),
        ({"text": 5, "sources": []}, "text"),
        ({"text": "x", "sources": [5]}, "sources"),
        ({"text": "x", "sources": [{"id": "a", "text": "b", "score": 2}]}, "sources"),
        ({"text": "x", "sources": [], "entailment_threshold": 1.5}, "entailment_threshold"),
        ({"text": "x", "sources": [], "surprise": 1}, "surprise"),
    ],
)
def test_check_endpoint_rejects_bad_input_naming_the_field(api, payload, field):
    response = api.post("/api/v1/grounding/check/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_check_endpoint_needs_a_key(client):
    assert client.post("/api/v1/grounding/check/", {}, content_type="application/json").status_code == 401


def _verifier_run(api, output, *, sources=(SOURCE,), **rules):
    run_id = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json").json()["id"]
    api.post(
        f"/api/v1/runs/{run_id}/grounding/",
        {"citations": ["pricing"], "sources": list(sources), "output": output},
        format="json",
    )
    return run_id, api.post(f"/api/v1/runs/{run_id}/complete/", {"output": output}, format="json").json()


def test_contradicted_claim_is_a_violation_with_its_reason_code(
    api, acme, make_policy, django_capture_on_commit_callbacks
):
    make_policy(rules={"nli_check": True, "contradiction_action": "block", "min_citations": 0})
    with django_capture_on_commit_callbacks(execute=True):
        run_id, _ = _verifier_run(api, "Premium users get 500 requests per minute.")
    with scope(tenant=acme):
        evaluation = Evaluation.objects.get(run_id=run_id, source="verifier")
    assert evaluation.action == "block"
    assert evaluation.reason.startswith('Verifier: 1 claim contradicts the sources — "Premium users get 500 requests')
    assert evaluation.metadata["reason_codes"] == ["GROUNDING_CONTRADICTION"]
    claim = evaluation.metadata["verification"]["claims"][0]
    assert claim["verdict"] == "contradicted"
    assert "1,000 requests per minute" in claim["best_source"]["span"] or "1000" in claim["best_source"]["span"]


def test_supported_output_passes_the_verifier(api, acme, make_policy, django_capture_on_commit_callbacks):
    make_policy(rules={"nli_check": True, "min_citations": 0})
    with django_capture_on_commit_callbacks(execute=True):
        # the reformatted "1000" is a strict expected failure of the verifier now
        # (tests/test_verifier_evidence.py, a tier with a rival tier beside it)
        run_id, _ = _verifier_run(api, "Premium users get 1,000 requests per minute.")
    with scope(tenant=acme):
        evaluation = Evaluation.objects.get(run_id=run_id, source="verifier")
    assert evaluation.action == "allow"
    assert evaluation.reason == "Verifier: 1/1 claims supported"


def test_unverifiable_claims_over_the_ratio_are_flagged(api, acme, make_policy, django_capture_on_commit_callbacks):
    make_policy(
        rules={"nli_check": True, "min_citations": 0, "max_unverifiable_ratio": 0.0, "unverifiable_action": "warn"}
    )
    with django_capture_on_commit_callbacks(execute=True):
        run_id, _ = _verifier_run(api, "The Eiffel Tower was completed in 1889 in Paris.")
    with scope(tenant=acme):
        evaluation = Evaluation.objects.get(run_id=run_id, source="verifier")
    assert evaluation.action == "warn"
    assert evaluation.reason == "Verifier: unverifiable claims ratio (1.0) exceeds max (0.0)"
    assert evaluation.metadata["reason_codes"] == ["GROUNDING_UNVERIFIABLE"]


def test_no_sources_makes_the_verifier_a_no_op(api, acme, make_policy, django_capture_on_commit_callbacks):
    make_policy(rules={"nli_check": True, "min_citations": 0})
    with django_capture_on_commit_callbacks(execute=True):
        run_id, _ = _verifier_run(api, "Premium users get 500 requests per minute.", sources=())
    with scope(tenant=acme):
        evaluation = Evaluation.objects.get(run_id=run_id, source="verifier")
    assert evaluation.action == "allow"
    assert evaluation.metadata["reason_codes"] == ["GROUNDING_NO_SOURCES"]


def test_blocking_verifier_at_mid_execution_answers_inline(api, make_policy):
    make_policy(
        rules={
            "nli_check": True,
            "nli_phase": "mid_execution",
            "contradiction_action": "block",
            "min_citations": 0,
            "min_grounding_score": None,
        }
    )
    run_id = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json").json()["id"]
    decision = api.post(
        f"/api/v1/runs/{run_id}/grounding/",
        {"sources": [SOURCE], "output": "Free users get 1,000 requests per minute."},
        format="json",
    ).json()["decision"]
    assert decision["action"] == "block"
    assert "GROUNDING_CONTRADICTION" in decision["evaluations"][-1]["metadata"]["reason_codes"]


def test_each_claim_carries_the_spans_used_the_facts_matched_and_what_failed(api):
    # docs/verifier.md promises these on every claim verdict; the response serializer once dropped them.
    body = api.post(
        "/api/v1/grounding/check/",
        {
            "text": "Premium users get 500 requests per minute. Free users get 100 requests per minute.",
            "sources": [SOURCE],
        },
        format="json",
    ).json()
    contradicted, supported = body["claims"]
    assert contradicted["verdict"] == "contradicted", contradicted
    assert contradicted["failed"].startswith("number mismatch"), contradicted
    assert contradicted["evidence"][0]["source_id"] == "pricing"
    assert "Premium users get 1,000 requests per minute." in contradicted["evidence"][0]["span"]
    assert supported["verdict"] == "supported", supported
    assert supported["failed"] is None and supported["matched"], supported
    assert set(supported["probabilities"]) >= {"supported", "contradicted"}
    assert supported["thresholds_input"]["path"] in ("combiner", "nli")
