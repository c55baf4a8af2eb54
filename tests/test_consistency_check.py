"""factual_consistency_check: the claims of the final output checked against each other with the
local verifier's contradiction detection, at after_workflow, inline."""

import pytest
from api_support import complete, create_policy, ground, start_run

from judges import services as judge_services
from policies.engine import PolicySpec

pytestmark = pytest.mark.django_db

RULES = {
    "factual_consistency_check": True,
    "min_grounding_score": None,
    "min_citations": 0,
    "action_on_violation": "block",
    "abstention_response": "Let me double-check that.",
}
CONTRADICTORY = (
    "The Federal Reserve raised its benchmark rate by 25 basis points in March 2023. "
    "Inflation eased later that year. "
    "The Federal Reserve raised its benchmark rate by 50 basis points in March 2023."
)
CONSISTENT = (
    "The Federal Reserve raised its benchmark rate by 25 basis points in March 2023. Inflation eased later that year."
)


def consistency(decision):
    return [e for e in decision["evaluations"] if e.get("source") == "verifier"]


def test_two_claims_of_one_answer_that_contradict_each_other_block(api):
    create_policy(api, rules=RULES)
    run_id = start_run(api)

    decision = complete(api, run_id, output=CONTRADICTORY).json()["decision"]

    assert decision["action"] == "block"
    assert decision["abstention_response"] == "Let me double-check that."
    [evaluation] = consistency(decision)
    assert evaluation["phase"] == "after_workflow"
    [pair] = evaluation["metadata"]["contradictions"]
    assert (pair["claim_a"], pair["claim_b"]) == (
        "The Federal Reserve raised its benchmark rate by 25 basis points in March 2023.",
        "The Federal Reserve raised its benchmark rate by 50 basis points in March 2023.",
    )
    # the verifier's own words for the conflict (judges.verifier.find_contradictions)
    assert pair["reason"].startswith("number mismatch:") and "25" in pair["reason"] and "50" in pair["reason"]
    assert decision["reason"] == (
        "Contradictory claims in output: "
        '"The Federal Reserve raised its benchmark rate by 25 basis points in March 2023." vs '
        f'"The Federal Reserve raised its benchmark rate by 50 basis points in March 2023." ({pair["reason"]})'
    )
    assert evaluation["metadata"]["claims_checked"] == 3
    assert evaluation["metadata"]["check"] == "consistency"
    assert evaluation["metadata"]["reason_codes"] == ["OUTPUT_SELF_CONTRADICTION"]
    assert api.get(f"/api/v1/runs/{run_id}/").json()["status"] == "blocked"


def test_a_consistent_answer_passes(api):
    create_policy(api, rules=RULES)
    run_id = start_run(api)

    decision = complete(api, run_id, output=CONSISTENT).json()["decision"]

    assert decision["action"] == "allow"
    assert [e["reason"] for e in consistency(decision)] == ["Consistency check passed (2 claims)"]


@pytest.mark.parametrize("output, claims", [("", 0), ("The rate rose in 2023.", 1)])
def test_fewer_than_two_claims_have_nothing_to_compare(api, output, claims):
    create_policy(api, rules=RULES)
    run_id = start_run(api)

    decision = complete(api, run_id, output=output).json()["decision"]

    assert [(e["action"], e["reason"], e["metadata"]) for e in consistency(decision)] == [
        (
            "allow",
            "Consistency check: fewer than two claims to compare",
            {"check": "consistency", "claims_checked": claims},
        )
    ]


def test_several_contradicting_pairs_are_counted_in_the_reason(api):
    create_policy(api, rules=RULES)
    run_id = start_run(api)
    output = CONTRADICTORY + " The Federal Reserve raised its benchmark rate by 75 basis points in March 2023."

    decision = complete(api, run_id, output=output).json()["decision"]

    [evaluation] = consistency(decision)
    pairs = evaluation["metadata"]["contradictions"]
    assert len(pairs) == 3
    assert decision["reason"].startswith("Contradictory claims in output (3 pairs): ")


def test_the_policy_action_applies(api):
    create_policy(api, rules={**RULES, "action_on_violation": "warn"})
    run_id = start_run(api)

    assert complete(api, run_id, output=CONTRADICTORY).json()["decision"]["action"] == "warn"


def test_the_final_output_is_checked_not_the_reports(api):
    create_policy(api, rules=RULES)
    run_id = start_run(api)
    report = ground(api, run_id, output=CONTRADICTORY).json()["decision"]

    assert consistency(report) == []
    assert complete(api, run_id, output=CONSISTENT).json()["decision"]["action"] == "allow"


def test_off_by_default(api):
    create_policy(api, rules={"min_grounding_score": None, "min_citations": 0})
    run_id = start_run(api)

    decision = complete(api, run_id, output=CONTRADICTORY).json()["decision"]

    assert (decision["action"], consistency(decision)) == ("allow", [])


def test_a_failing_verifier_never_breaks_the_run(api, monkeypatch):
    import judges.verifier

    def broken(*args, **kwargs):
        raise RuntimeError("model missing")

    monkeypatch.setattr(judges.verifier, "find_contradictions", broken)
    create_policy(api, rules=RULES)
    run_id = start_run(api)

    decision = complete(api, run_id, output=CONTRADICTORY).json()["decision"]

    assert decision["action"] == "allow"
    assert [e["reason"] for e in consistency(decision)] == ["Consistency check skipped: RuntimeError"]


def test_it_is_an_inline_after_workflow_judge():
    spec = PolicySpec(1, "P", "grounding", 1, {"factual_consistency_check": True})
    assert judge_services.kinds_for(spec, "after_workflow") == [judge_services.CONSISTENCY]
    assert judge_services.kinds_for(spec, "mid_execution") == []
    assert judge_services.runs_inline(spec, "after_workflow", judge_services.CONSISTENCY)
