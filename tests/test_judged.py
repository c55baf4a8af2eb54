"""Judges re-thresholded from their stored output (policies/judged.py) decide as the judges run anew
would: what replay and calibration rest on."""

import pytest

from judges.verifier import VerifierConfig, check_grounding
from policies.categories import get_category
from policies.engine import PolicySpec
from policies.judged import claim_verdict, llm_verdict, verifier_rethreshold
from policies.replay import Judged, RunRow, replay

SOURCES = [
    {"id": "fed", "text": "The Federal Reserve raised interest rates by 0.25 percent in July 2023."},
    {"id": "imf", "text": "The IMF expects global growth of 3.0% in 2023, down from 3.4% in 2022."},
]
OUTPUTS = [
    "The Federal Reserve raised interest rates by 0.25 percent in July 2023.",
    "The Federal Reserve raised interest rates by 0.75 percent in July 2023.",
    "The IMF expects global growth of 3.0% in 2023. Powell spoke in Denver about housing.",
    "The Federal Reserve cut interest rates in July 2023. The IMF expects growth of 3.4% in 2023.",
    "Global growth will be 3.0% in 2023 according to the IMF, and the Fed did not raise rates.",
]
#: and two where the combiner's reading decides alone: a contradiction no fact shows (P(contradicted)
#: just above 0.5), and a conflict that a combiner sure of "unverifiable" keeps from the backstop
#: (judges/verifier/verifier.py ``undecided``)
CASES = [(output, SOURCES) for output in OUTPUTS] + [
    ("The plan includes priority support.", ["The Business plan includes single sign-on and audit logs."]),
    (
        "Bolt set the 9.58-second 100 m world record in Berlin in 2009, with Tyson Gay finishing second.",
        [
            "Usain Bolt set the 100 m world record of 9.58 seconds at the 2009 World Championships in Berlin, "
            "improving on his own mark from the Beijing Olympics a year earlier."
        ],
    ),
]
THRESHOLDS = [(0.5, 0.5), (0.2, 0.8), (0.8, 0.2), (0.05, 0.95), (0.95, 0.05), (0.35, 0.35)]


@pytest.mark.parametrize("output, sources", CASES)
@pytest.mark.parametrize("entailment, contradiction", THRESHOLDS)
def test_rethresholding_a_stored_verification_matches_running_the_verifier_again(
    output, sources, entailment, contradiction
):
    stored = check_grounding(output, sources, VerifierConfig()).to_dict()
    rerun = check_grounding(
        output, sources, VerifierConfig(entailment_threshold=entailment, contradiction_threshold=contradiction)
    )
    rules = {
        "entailment_threshold": entailment,
        "contradiction_threshold": contradiction,
        "max_unverifiable_ratio": 0.5,
    }
    _, _, metadata = verifier_rethreshold(rules, stored)
    counts = metadata["rethresholded"]
    assert (counts["supported_count"], counts["contradicted_count"], counts["unverifiable_count"]) == (
        rerun.supported_count,
        rerun.contradicted_count,
        rerun.unverifiable_count,
    )


def test_the_llm_verdict_is_the_live_judges():
    rules = {"llm_grounding_threshold": 0.7, "action_on_violation": "block"}
    assert llm_verdict(rules, 0.69999) == ("allow", "LLM judge score (0.7) meets threshold (0.7)", 0.7)  # rounded
    assert llm_verdict(rules, 0.2)[:2] == ("block", "LLM judge score (0.2) below threshold (0.7)")
    assert llm_verdict(rules, 0.9)[:2] == ("allow", "LLM judge score (0.9) meets threshold (0.7)")


def test_a_claim_stored_before_its_thresholds_input_is_decided_on_its_probabilities():
    old = {
        "verdict": "unverifiable",
        "probabilities": {"supported": 0.45, "contradicted": 0.3},
        "decided_by": "combiner",
    }
    assert claim_verdict(old, entailment=0.4, contradiction=0.5) == "supported"
    assert claim_verdict(old, entailment=0.5, contradiction=0.2) == "unverifiable"  # no conflict was kept
    contradicted = {**old, "verdict": "contradicted", "probabilities": {"supported": 0.1, "contradicted": 0.6}}
    assert claim_verdict(contradicted, entailment=0.5, contradiction=0.5) == "contradicted"
    assert claim_verdict(contradicted, entailment=0.5, contradiction=0.7) == "unverifiable"
    assert (
        claim_verdict({"verdict": "supported"}, entailment=0.99, contradiction=0.99) == "supported"
    )  # nothing to redo


def test_a_contradiction_without_a_conflict_stands_only_where_the_verifier_that_stored_it_allowed_it():
    """Since 2026-11-27 the combiner's contradiction stands without a fact conflict (kind
    "meaning"); a claim stored before was decided under the older rule and keeps it."""
    inputs = {"conflict": None, "backstop": False, "path": "combiner"}
    claim = {"verdict": "contradicted", "probabilities": {"supported": 0.1, "contradicted": 0.6}}
    meaning = {**claim, "thresholds_input": {**inputs, "on_meaning": True}}
    assert claim_verdict(meaning, entailment=0.5, contradiction=0.5) == "contradicted"
    assert claim_verdict(meaning, entailment=0.5, contradiction=0.7) == "unverifiable"
    assert claim_verdict(meaning, entailment=0.05, contradiction=0.7) == "supported"
    older = {**claim, "verdict": "unverifiable", "thresholds_input": inputs}
    assert claim_verdict(older, entailment=0.5, contradiction=0.5) == "unverifiable"


def test_an_escalated_claim_keeps_the_llms_verdict_where_the_local_one_stays_undecided():
    escalated = {
        "verdict": "contradicted",
        "decided_by": "llm",
        "escalated": True,
        "probabilities": {"supported": 0.45, "contradicted": 0.3},
        "thresholds_input": {"conflict": None, "backstop": False, "path": "combiner"},
    }
    assert claim_verdict(escalated, entailment=0.5, contradiction=0.5) == "contradicted"  # the LLM's answer
    assert claim_verdict(escalated, entailment=0.4, contradiction=0.5) == "supported"  # decided locally first


def test_the_consistency_check_keeps_its_pairs_and_takes_the_candidates_action():
    rules = get_category("grounding").effective_rules(
        {"factual_consistency_check": True, "action_on_violation": "block", "min_citations": 0}
    )
    spec = PolicySpec(0, "C", "grounding", 1, rules)
    stored = {
        ("after_workflow", None): Judged(consistency={"check": "consistency", "contradictions": [{"claim_a": "a"}]})
    }
    summary = replay([RunRow(1, "a", [], True, "out", judged=stored)], before=[], after=[spec])
    assert summary.after["block"] == 1 and summary.judges_reused == 1
