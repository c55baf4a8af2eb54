"""The grounding category, phase by phase, against docs/grounding-policies.md: rules, modes, examples, gotchas.

Pure tests: no database, no Django.
"""

import pytest

from policies.categories import get_category
from policies.engine import Outcome, RunState

GROUNDING = get_category("grounding")

STRICT_RESEARCH = {
    "require_source_grounding": True,
    "min_grounding_score": 0.8,
    "min_citations": 2,
    "max_unsupported_claims": 0,
    "abstention_threshold": 0.5,
    "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
    "action_on_violation": "block",
}
MEDICAL_QA = {
    "require_source_grounding": True,
    "min_grounding_score": 0.9,
    "min_citations": 3,
    "max_unsupported_claims": 0,
    "abstention_threshold": 0.7,
    "abstention_response": (
        "I cannot provide a reliable answer based on available evidence. Please consult a qualified professional."
    ),
    "action_on_violation": "block",
}
LENIENT_RAG = {
    "require_source_grounding": False,
    "min_grounding_score": 0.6,
    "min_citations": 1,
    "max_unsupported_claims": 3,
    "abstention_threshold": None,
    "action_on_violation": "warn",
}
CITATION_ONLY = {
    "require_source_grounding": True,
    "min_citations": 1,
    "max_unsupported_claims": 2,
    "action_on_violation": "block",
}
RAG_PIPELINE = {
    "min_grounding_score": 0.7,
    "score_relevance_floor": 0.5,
    "score_eval_mode": "all",
    "min_citations": 1,
    "action_on_violation": "block",
}
LENIENT_AVERAGE = {
    "min_grounding_score": 0.7,
    "score_relevance_floor": 0.4,
    "score_eval_mode": "average",
    "action_on_violation": "warn",
}
FINANCIAL_CRISIS_SCORES = (0.92, 0.87, 0.85, 0.35, 0.22)


def evaluate(phase, raw_rules=None, **state) -> Outcome:
    """Evaluate as production does: the admin's rules validated, then defaults filled."""
    rules = GROUNDING.effective_rules(GROUNDING.clean_rules(raw_rules or {}))
    return GROUNDING.evaluate(phase, rules, RunState(**state))


def mid(raw_rules=None, scores=()):
    return evaluate("mid_execution", raw_rules, grounding_scores=tuple(scores))


def after(raw_rules=None, citations=(), unsupported=(), confidence=None):
    return evaluate(
        "after_workflow",
        raw_rules,
        citations=tuple(citations),
        unsupported_claims=tuple(unsupported),
        output_confidence=confidence,
    )


def sources(n):
    return tuple(f"Source {i}" for i in range(1, n + 1))


# --- before_workflow -------------------------------------------------------------------------


def test_before_workflow_always_allows_and_stores_the_effective_rules():
    outcome = evaluate("before_workflow", STRICT_RESEARCH)
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding rules stored"
    assert outcome.abstention_response is None
    expected = GROUNDING.effective_rules(GROUNDING.clean_rules(STRICT_RESEARCH))
    assert outcome.metadata == {"rules": expected}
    assert outcome.metadata["rules"]["score_eval_mode"] == "all"  # defaults filled in


def test_before_workflow_allows_even_with_nothing_reported_under_a_blocking_policy():
    outcome = evaluate("before_workflow", {"action_on_violation": "block", "min_citations": 5})
    assert outcome.action == "allow"


# --- mid_execution: the per-score check ------------------------------------------------------


def test_allow_when_there_are_no_scores_to_check():
    outcome = mid(STRICT_RESEARCH, [])
    assert (outcome.action, outcome.reason, outcome.metadata) == (
        "allow",
        "No grounding scores to check",
        {},
    )


def test_allow_when_the_score_check_is_disabled():
    outcome = mid({"min_grounding_score": None, "action_on_violation": "block"}, [0.0, 0.1])
    assert outcome.action == "allow"
    assert (outcome.reason, outcome.metadata) == ("Score check disabled", {})


def test_warn_by_default_when_a_score_is_below_threshold():
    outcome = mid({}, [0.9, 0.42])
    assert outcome.action == "warn"
    assert outcome.reason == "Grounding score (0.42) below threshold (0.7)"
    assert outcome.metadata == {"score": 0.42, "threshold": 0.7}
    assert outcome.abstention_response is None


def test_block_when_a_score_is_below_threshold_and_the_policy_blocks():
    outcome = mid({"action_on_violation": "block"}, [0.42])
    assert outcome.action == "block"
    assert outcome.reason == "Grounding score (0.42) below threshold (0.7)"
    assert outcome.metadata == {"score": 0.42, "threshold": 0.7}


def test_the_first_failing_score_in_reported_order_is_named():
    outcome = mid({}, [0.9, 0.5, 0.1, 0.65])
    assert outcome.reason == "Grounding score (0.5) below threshold (0.7)"
    assert outcome.metadata == {"score": 0.5, "threshold": 0.7}


def test_a_score_exactly_at_the_threshold_passes():
    outcome = mid({"min_grounding_score": 0.7}, [0.7, 0.7])
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding scores passed (2 checked)"
    assert outcome.metadata == {"checked": 2, "threshold": 0.7}


def test_allow_when_every_score_passes():
    outcome = mid(STRICT_RESEARCH, [0.9, 0.85, 0.92])
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding scores passed (3 checked)"
    assert outcome.metadata == {"checked": 3, "threshold": 0.8}
    assert outcome.abstention_response is None


def test_a_blocking_score_violation_carries_the_abstention_response():
    outcome = mid(STRICT_RESEARCH, [0.9, 0.42])
    assert outcome.action == "block"
    assert outcome.abstention_response == STRICT_RESEARCH["abstention_response"]


def test_a_warning_never_carries_the_abstention_response():
    rules = {**STRICT_RESEARCH, "action_on_violation": "warn"}
    assert mid(rules, [0.42]).abstention_response is None


def test_thresholds_of_zero_and_one():
    assert mid({"min_grounding_score": 0.0}, [0.0]).action == "allow"
    assert mid({"min_grounding_score": 1.0}, [1.0]).action == "allow"
    outcome = mid({"min_grounding_score": 1.0}, [0.9999])
    assert outcome.reason == "Grounding score (0.9999) below threshold (1.0)"


def test_integer_thresholds_are_stored_and_reported_as_floats():
    outcome = mid({"min_grounding_score": 1}, [0.5])
    assert outcome.reason == "Grounding score (0.5) below threshold (1.0)"
    assert type(outcome.metadata["threshold"]) is float


# --- mid_execution: the relevance floor (docs/grounding-policies.md, "Filtering for RAG Pipelines") ------------


def test_rag_pipeline_allows_the_financial_crisis_query_with_its_floor():
    outcome = mid(RAG_PIPELINE, FINANCIAL_CRISIS_SCORES)
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding scores passed (3 checked)"
    assert outcome.metadata == {"checked": 3, "threshold": 0.7}


def test_rag_pipeline_blocks_on_the_tail_score_without_its_floor():
    rules = {**RAG_PIPELINE, "score_relevance_floor": None}
    outcome = mid(rules, FINANCIAL_CRISIS_SCORES)
    assert outcome.action == "block"
    assert outcome.reason == "Grounding score (0.35) below threshold (0.7)"
    assert outcome.metadata == {"score": 0.35, "threshold": 0.7}


def test_block_when_no_score_reaches_the_relevance_floor():
    outcome = mid(RAG_PIPELINE, [0.35, 0.22])
    assert outcome.action == "block"
    assert outcome.reason == ("No grounding scores above relevance floor — all retrieved results appear irrelevant")
    assert outcome.metadata == {"relevance_floor": 0.5, "scores": [0.35, 0.22]}


def test_warn_when_no_score_reaches_the_relevance_floor_under_a_warning_policy():
    outcome = mid({"score_relevance_floor": 0.5}, [0.1])
    assert outcome.action == "warn"
    assert outcome.reason.startswith("No grounding scores above relevance floor")


def test_a_score_exactly_at_the_floor_is_checked():
    outcome = mid({"score_relevance_floor": 0.5}, [0.5, 0.1])
    assert outcome.reason == "Grounding score (0.5) below threshold (0.7)"


def test_scores_below_the_floor_are_ignored_even_when_they_fail():
    outcome = mid({"score_relevance_floor": 0.8}, [0.95, 0.79, 0.1])
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding scores passed (1 checked)"


def test_the_floor_applies_in_every_mode():
    for mode in ("all", "average", "top_n"):
        outcome = mid({"score_relevance_floor": 0.5, "score_eval_mode": mode}, [0.9, 0.1, 0.2])
        assert outcome.action == "allow", mode
        assert outcome.metadata["checked"] == 1, mode


# --- mid_execution: evaluation modes -------------------------------------------------------


def test_lenient_average_allows_when_the_mean_of_relevant_scores_passes():
    # 0.3 is below the 0.4 floor; the mean of 0.9, 0.6, 0.65 is 0.7167.
    outcome = mid(LENIENT_AVERAGE, [0.9, 0.6, 0.65, 0.3])
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding scores passed (3 checked)"
    assert outcome.metadata == {"checked": 3, "threshold": 0.7, "mode": "average"}


def test_lenient_average_warns_when_the_mean_is_below_threshold():
    outcome = mid(LENIENT_AVERAGE, [0.6, 0.5, 0.2])
    assert outcome.action == "warn"
    assert outcome.reason == "Average grounding score (0.55) below threshold (0.7)"
    assert outcome.metadata == {"average": 0.55, "threshold": 0.7, "count": 2}


def test_average_is_rounded_to_four_places():
    outcome = mid({"score_eval_mode": "average"}, [0.1, 0.2, 0.2])
    assert outcome.reason == "Average grounding score (0.1667) below threshold (0.7)"
    assert outcome.metadata["average"] == 0.1667


def test_average_exactly_at_threshold_passes_despite_float_noise():
    # sum((0.7, 0.7, 0.7)) / 3 == 0.6999999999999998 in floating point.
    assert mid({"score_eval_mode": "average"}, [0.7, 0.7, 0.7]).action == "allow"
    assert mid({"score_eval_mode": "average"}, [0.6, 0.8]).action == "allow"


def test_average_lets_one_weak_score_through_that_all_would_flag():
    scores = [0.95, 0.9, 0.5]
    assert mid({"score_eval_mode": "all"}, scores).action == "warn"
    assert mid({"score_eval_mode": "average"}, scores).action == "allow"


def test_top_n_checks_only_the_highest_scores():
    outcome = mid({"score_eval_mode": "top_n", "score_top_n": 3}, [0.4, 0.9, 0.8, 0.1, 0.75])
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding scores passed (3 checked)"
    assert outcome.metadata == {"checked": 3, "threshold": 0.7, "mode": "top_n"}


def test_top_n_names_the_highest_failing_score_among_the_top():
    rules = {"score_eval_mode": "top_n", "score_top_n": 3, "action_on_violation": "block"}
    outcome = mid(rules, [0.3, 0.9, 0.42, 0.1, 0.5])
    assert outcome.action == "block"
    assert outcome.reason == "Grounding score (0.5) below threshold (0.7) in top 3"
    assert outcome.metadata == {"score": 0.5, "threshold": 0.7, "top_n": 3}


def test_top_n_with_fewer_scores_than_n_checks_them_all():
    rules = {"score_eval_mode": "top_n", "score_top_n": 5}
    passing = mid(rules, [0.9, 0.8])
    assert passing.action == "allow"
    assert passing.reason == "Grounding scores passed (2 checked)"
    assert passing.metadata == {"checked": 2, "threshold": 0.7, "mode": "top_n"}
    failing = mid(rules, [0.9, 0.42])
    assert failing.reason == "Grounding score (0.42) below threshold (0.7) in top 5"


def test_top_n_defaults_to_three():
    outcome = mid({"score_eval_mode": "top_n"}, [0.9, 0.9, 0.9, 0.1])
    assert outcome.action == "allow"
    assert outcome.metadata["checked"] == 3


def test_top_one_only_checks_the_best_score():
    rules = {"score_eval_mode": "top_n", "score_top_n": 1}
    assert mid(rules, [0.1, 0.71, 0.2]).action == "allow"
    assert mid(rules, [0.1, 0.69]).reason == "Grounding score (0.69) below threshold (0.7) in top 1"


# --- after_workflow: the audit ---------------------------------------------------------------


def test_allow_and_count_citations_when_the_audit_passes():
    outcome = after({}, citations=sources(3))
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding audit passed (3 citations)"
    assert outcome.metadata == {"citation_count": 3}
    assert outcome.abstention_response is None


def test_warn_by_default_when_citations_are_below_minimum():
    outcome = after({"min_citations": 2}, citations=sources(1))
    assert outcome.action == "warn"
    assert outcome.reason == "Citations (1) below minimum (2)"
    assert outcome.metadata == {
        "warnings": ["Citations (1) below minimum (2)"],
        "citation_count": 1,
    }


def test_block_when_citations_below_minimum():
    outcome = after({"min_citations": 3, "action_on_violation": "block"}, citations=sources(2))
    assert outcome.action == "block"
    assert outcome.reason == "Citations (2) below minimum (3)"


def test_citations_exactly_at_the_minimum_pass():
    assert after({"min_citations": 2}, citations=sources(2)).action == "allow"


def test_min_citations_zero_accepts_no_citations():
    outcome = after({"min_citations": 0}, citations=())
    assert outcome.action == "allow"
    assert outcome.reason == "Grounding audit passed (0 citations)"
    assert outcome.metadata == {"citation_count": 0}


def test_block_when_grounding_is_required_and_no_citations_are_given():
    outcome = after({"require_source_grounding": True, "min_citations": 0, "action_on_violation": "block"})
    assert outcome.action == "block"
    assert outcome.reason == "No source citations provided (grounding required)"
    assert outcome.metadata == {
        "warnings": ["No source citations provided (grounding required)"],
        "citation_count": 0,
    }


def test_required_grounding_is_satisfied_by_a_single_citation():
    assert after({"require_source_grounding": True}, citations=sources(1)).action == "allow"


def test_require_grounding_and_min_citations_double_fire_on_zero_citations():
    # docs/grounding-policies.md, Common Gotchas: both warnings, joined with "; ".
    outcome = after({"require_source_grounding": True, "min_citations": 1}, citations=())
    assert outcome.reason == ("Citations (0) below minimum (1); No source citations provided (grounding required)")
    assert outcome.metadata == {
        "warnings": [
            "Citations (0) below minimum (1)",
            "No source citations provided (grounding required)",
        ],
        "citation_count": 0,
    }


def test_block_when_unsupported_claims_exceed_max():
    rules = {"max_unsupported_claims": 1, "action_on_violation": "block"}
    outcome = after(rules, citations=sources(2), unsupported=["claim a", "claim b"])
    assert outcome.action == "block"
    assert outcome.reason == "Unsupported claims (2) exceeds max (1)"
    assert outcome.metadata == {
        "warnings": ["Unsupported claims (2) exceeds max (1)"],
        "citation_count": 2,
    }


def test_unsupported_claims_at_the_max_pass():
    outcome = after({"max_unsupported_claims": 2}, citations=sources(1), unsupported=["a", "b"])
    assert outcome.action == "allow"


def test_max_unsupported_claims_null_disables_the_check():
    outcome = after({"max_unsupported_claims": None}, citations=sources(1), unsupported=["x"] * 50)
    assert outcome.action == "allow"


def test_max_unsupported_claims_zero_flags_any_unsupported_claim():
    outcome = after({"max_unsupported_claims": 0}, citations=sources(1), unsupported=["x"])
    assert outcome.action == "warn"
    assert outcome.reason == "Unsupported claims (1) exceeds max (0)"
    assert after({"max_unsupported_claims": 0}, citations=sources(1)).action == "allow"


def test_block_when_output_confidence_is_below_the_abstention_threshold():
    rules = {"abstention_threshold": 0.5, "action_on_violation": "block"}
    outcome = after(rules, citations=sources(1), confidence=0.3)
    assert outcome.action == "block"
    assert outcome.reason == "Output confidence (0.3) below abstention threshold (0.5)"
    assert outcome.metadata == {
        "warnings": ["Output confidence (0.3) below abstention threshold (0.5)"],
        "citation_count": 1,
        "abstention_triggered": True,
    }


def test_confidence_exactly_at_the_abstention_threshold_passes():
    outcome = after({"abstention_threshold": 0.5}, citations=sources(1), confidence=0.5)
    assert outcome.action == "allow"


def test_abstention_is_skipped_without_output_confidence():
    rules = {"abstention_threshold": 0.9, "action_on_violation": "block"}
    outcome = after(rules, citations=sources(1), confidence=None)
    assert outcome.action == "allow"
    assert outcome.metadata == {"citation_count": 1}


def test_no_abstention_threshold_means_no_confidence_check():
    assert after({}, citations=sources(1), confidence=0.0).action == "allow"


def test_after_workflow_violations_are_collected_in_order():
    rules = {
        "require_source_grounding": True,
        "min_citations": 2,
        "max_unsupported_claims": 0,
        "abstention_threshold": 0.6,
        "action_on_violation": "block",
    }
    outcome = after(rules, citations=(), unsupported=["a", "b"], confidence=0.25)
    expected = [
        "Citations (0) below minimum (2)",
        "No source citations provided (grounding required)",
        "Unsupported claims (2) exceeds max (0)",
        "Output confidence (0.25) below abstention threshold (0.6)",
    ]
    assert outcome.reason == "; ".join(expected)
    assert outcome.metadata == {
        "warnings": expected,
        "citation_count": 0,
        "abstention_triggered": True,
    }


def test_the_seed_example_reason_for_citations_and_unsupported_claims():
    rules = {"max_unsupported_claims": 0, "action_on_violation": "block"}
    outcome = after(rules, citations=(), unsupported=["a", "b"])
    assert outcome.reason == ("Citations (0) below minimum (1); Unsupported claims (2) exceeds max (0)")


def test_after_workflow_counts_every_citation_it_is_given():
    # Accumulating over record_grounding calls is the caller's job; all of them count here.
    step_one = ("Federal Reserve Report", "IMF Analysis")
    step_two = ("SEC Filing 2023", "Legal Review")
    outcome = after({"min_citations": 4}, citations=step_one + step_two)
    assert outcome.reason == "Grounding audit passed (4 citations)"


def test_after_workflow_ignores_grounding_scores():
    outcome = evaluate("after_workflow", {}, grounding_scores=(0.0, 0.1), citations=sources(1))
    assert outcome.action == "allow"


def test_mid_execution_ignores_citations_and_confidence():
    outcome = evaluate(
        "mid_execution",
        STRICT_RESEARCH,
        grounding_scores=(0.9,),
        citations=(),
        unsupported_claims=("a", "b", "c"),
        output_confidence=0.0,
    )
    assert outcome.action == "allow"


def test_a_blocking_audit_carries_the_abstention_response():
    outcome = after(STRICT_RESEARCH, citations=sources(1))
    assert outcome.action == "block"
    assert outcome.abstention_response == STRICT_RESEARCH["abstention_response"]


def test_a_blocking_policy_without_an_abstention_response_carries_none():
    outcome = after({"action_on_violation": "block"}, citations=())
    assert outcome.action == "block"
    assert outcome.abstention_response is None


def test_an_empty_abstention_response_counts_as_unset():
    outcome = after({"action_on_violation": "block", "abstention_response": ""}, citations=())
    assert outcome.abstention_response is None


def test_factual_consistency_check_is_accepted_and_changes_nothing():
    for phase, state in (
        ("before_workflow", {}),
        ("mid_execution", {"grounding_scores": (0.9, 0.3)}),
        ("after_workflow", {"citations": sources(1), "unsupported_claims": ("a",)}),
    ):
        on = evaluate(phase, {"factual_consistency_check": True}, **state)
        off = evaluate(phase, {"factual_consistency_check": False}, **state)
        assert (on.action, on.reason) == (off.action, off.reason), phase


def test_llm_judge_rules_do_not_change_the_engine_outcome():
    judge = {
        "llm_grounding_check": True,
        "llm_grounding_model": "claude-sonnet-4-20250514",
        "llm_grounding_threshold": 0.99,
        "llm_grounding_criteria": "Be harsh.",
        "llm_grounding_phase": "both",
    }
    assert mid(judge, [0.9]).action == "allow"
    assert after(judge, citations=sources(1)).action == "allow"


def test_grounding_defaults_to_warn():
    # docs/grounding-policies.md, Common Gotchas: unlike most handlers, grounding warns unless told to block.
    assert GROUNDING.effective_rules({})["action_on_violation"] == "warn"
    assert mid({}, [0.1]).action == "warn"
    assert after({}, citations=()).action == "warn"


def test_mid_execution_rejects_the_whole_report_on_one_low_score():
    # docs/grounding-policies.md, Common Gotchas: fires per record_grounding() call, not per claim.
    outcome = mid({"action_on_violation": "block"}, [0.95, 0.93, 0.91, 0.2, 0.99])
    assert outcome.action == "block"


# --- the seed's example policies ------------------------------------------------------------

EXAMPLES = [
    # (name, rules, phase, state, action, reason)
    (
        "strict research, well-grounded answer",
        STRICT_RESEARCH,
        "after_workflow",
        {"citations": sources(2), "output_confidence": 0.88},
        "allow",
        "Grounding audit passed (2 citations)",
    ),
    (
        "strict research, one citation short",
        STRICT_RESEARCH,
        "after_workflow",
        {"citations": sources(1), "output_confidence": 0.88},
        "block",
        "Citations (1) below minimum (2)",
    ),
    (
        "strict research, any unsupported claim",
        STRICT_RESEARCH,
        "after_workflow",
        {"citations": sources(3), "unsupported_claims": ("GDP fell 40%",)},
        "block",
        "Unsupported claims (1) exceeds max (0)",
    ),
    (
        "strict research, low confidence",
        STRICT_RESEARCH,
        "after_workflow",
        {"citations": sources(2), "output_confidence": 0.4},
        "block",
        "Output confidence (0.4) below abstention threshold (0.5)",
    ),
    (
        "strict research, weak claim",
        STRICT_RESEARCH,
        "mid_execution",
        {"grounding_scores": (0.9, 0.85, 0.79)},
        "block",
        "Grounding score (0.79) below threshold (0.8)",
    ),
    (
        "medical, three good sources",
        MEDICAL_QA,
        "after_workflow",
        {"citations": sources(3), "output_confidence": 0.95},
        "allow",
        "Grounding audit passed (3 citations)",
    ),
    (
        "medical, unsure",
        MEDICAL_QA,
        "after_workflow",
        {"citations": sources(3), "output_confidence": 0.69},
        "block",
        "Output confidence (0.69) below abstention threshold (0.7)",
    ),
    (
        "medical, score just under 0.9",
        MEDICAL_QA,
        "mid_execution",
        {"grounding_scores": (0.95, 0.89)},
        "block",
        "Grounding score (0.89) below threshold (0.9)",
    ),
    (
        "lenient rag, weak score warns",
        LENIENT_RAG,
        "mid_execution",
        {"grounding_scores": (0.7, 0.55)},
        "warn",
        "Grounding score (0.55) below threshold (0.6)",
    ),
    (
        "lenient rag, three unsupported claims are tolerated",
        LENIENT_RAG,
        "after_workflow",
        {"citations": sources(1), "unsupported_claims": ("a", "b", "c"), "output_confidence": 0.1},
        "allow",
        "Grounding audit passed (1 citations)",
    ),
    (
        "lenient rag, four unsupported claims warn",
        LENIENT_RAG,
        "after_workflow",
        {"citations": sources(1), "unsupported_claims": ("a", "b", "c", "d")},
        "warn",
        "Unsupported claims (4) exceeds max (3)",
    ),
    (
        "citation only, scores are not enforced",
        CITATION_ONLY,
        "mid_execution",
        {"grounding_scores": (0.9,)},
        "allow",
        "Grounding scores passed (1 checked)",
    ),
    (
        "citation only, no citations double-fires",
        CITATION_ONLY,
        "after_workflow",
        {"citations": ()},
        "block",
        "Citations (0) below minimum (1); No source citations provided (grounding required)",
    ),
    (
        "citation only, two unsupported claims pass",
        CITATION_ONLY,
        "after_workflow",
        {"citations": sources(1), "unsupported_claims": ("a", "b")},
        "allow",
        "Grounding audit passed (1 citations)",
    ),
    (
        "rag pipeline, financial crisis with floor",
        RAG_PIPELINE,
        "mid_execution",
        {"grounding_scores": FINANCIAL_CRISIS_SCORES},
        "allow",
        "Grounding scores passed (3 checked)",
    ),
    (
        "rag pipeline, nothing relevant",
        RAG_PIPELINE,
        "mid_execution",
        {"grounding_scores": (0.3, 0.2, 0.1)},
        "block",
        "No grounding scores above relevance floor — all retrieved results appear irrelevant",
    ),
    (
        "rag pipeline, audit",
        RAG_PIPELINE,
        "after_workflow",
        {"citations": ()},
        "block",
        "Citations (0) below minimum (1)",
    ),
    (
        "lenient average, financial crisis",
        LENIENT_AVERAGE,
        "mid_execution",
        {"grounding_scores": FINANCIAL_CRISIS_SCORES},
        "allow",
        "Grounding scores passed (3 checked)",
    ),
]


@pytest.mark.parametrize(
    "rules, phase, state, action, reason",
    [example[1:] for example in EXAMPLES],
    ids=[example[0] for example in EXAMPLES],
)
def test_seed_example_policies(rules, phase, state, action, reason):
    outcome = evaluate(phase, rules, **state)
    assert (outcome.action, outcome.reason) == (action, reason)


def test_citation_only_policy_does_not_check_scores_when_min_score_is_cleared():
    rules = {**CITATION_ONLY, "min_grounding_score": None}
    assert mid(rules, [0.01]).reason == "Score check disabled"


# --- robustness -----------------------------------------------------------------------------


def test_unknown_phase_is_a_value_error():
    with pytest.raises(ValueError, match="Unknown phase"):
        GROUNDING.evaluate("during_lunch", GROUNDING.effective_rules({}), RunState())


def test_stored_rules_missing_a_key_are_filled_with_defaults():
    # Rules stored before a rule existed still evaluate: the missing one takes its default.
    stored = {"min_grounding_score": 0.8, "action_on_violation": "block"}
    outcome = GROUNDING.evaluate("mid_execution", stored, RunState(grounding_scores=(0.5,)))
    assert outcome.reason == "Grounding score (0.5) below threshold (0.8)"
    assert outcome.action == "block"


def test_metadata_is_a_fresh_dict_each_time():
    rules = GROUNDING.effective_rules({})
    state = RunState(grounding_scores=(0.9,))
    first = GROUNDING.evaluate("mid_execution", rules, state)
    first.metadata["tampered"] = True
    assert "tampered" not in GROUNDING.evaluate("mid_execution", rules, state).metadata
    stored = GROUNDING.evaluate("before_workflow", rules, state)
    stored.metadata["rules"]["min_citations"] = 99
    assert rules["min_citations"] == 1
