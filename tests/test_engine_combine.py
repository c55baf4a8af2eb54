"""Running several policies for a phase and combining them into one decision. Pure tests."""

import dataclasses

import pytest

from policies.categories import UnknownCategory, get_category
from policies.engine import (
    ACTIONS,
    PHASES,
    Decision,
    Evaluation,
    PolicySpec,
    RunState,
    combine,
    evaluate_phase,
)

GROUNDING = get_category("grounding")
ABSTAIN = "I don't have sufficient grounded evidence to answer this accurately."


def policy(policy_id, name=None, version=1, **raw_rules):
    rules = GROUNDING.effective_rules(GROUNDING.clean_rules(raw_rules))
    return PolicySpec(policy_id, name or f"Policy {policy_id}", "grounding", version, rules)


def evaluation(action, reason="", policy_id=1, abstention_response=None, source="engine"):
    return Evaluation(
        policy_id,
        f"Policy {policy_id}",
        "grounding",
        1,
        "after_workflow",
        action,
        reason,
        {},
        abstention_response,
        source,
    )


def test_the_engine_constants():
    assert PHASES == ("before_workflow", "mid_execution", "after_workflow")
    assert ACTIONS == ("allow", "warn", "block")


# --- combine ---------------------------------------------------------------------------------

SEVERITY_CASES = [
    # (actions in order, final action, final reason)
    (["allow"], "allow", "r0"),
    (["allow", "allow"], "allow", "r0; r1"),
    (["allow", "warn"], "warn", "r1"),
    (["warn", "allow", "warn"], "warn", "r0; r2"),
    (["allow", "block", "warn"], "block", "r1"),
    (["block", "warn", "block", "allow"], "block", "r0; r2"),
    (["warn", "warn", "warn"], "warn", "r0; r1; r2"),
]


@pytest.mark.parametrize("actions, final, reason", SEVERITY_CASES)
def test_block_beats_warn_beats_allow_and_reasons_join_in_policy_order(actions, final, reason):
    evaluations = [evaluation(a, f"r{i}", policy_id=i) for i, a in enumerate(actions)]
    decision = combine("after_workflow", evaluations)
    assert (decision.action, decision.reason) == (final, reason)
    assert decision.evaluations == tuple(evaluations)
    assert decision.phase == "after_workflow"


def test_no_applicable_policies_allows():
    decision = combine("mid_execution", [])
    assert decision == Decision("allow", "mid_execution", "No applicable policies", (), None)
    assert decision.to_dict() == {
        "action": "allow",
        "phase": "mid_execution",
        "reason": "No applicable policies",
        "evaluations": [],
    }


def test_a_block_carries_the_first_blocking_abstention_response():
    decision = combine(
        "after_workflow",
        [
            evaluation("warn", "w", abstention_response="ignored: not blocking"),
            evaluation("block", "b1"),
            evaluation("block", "b2", abstention_response="first"),
            evaluation("block", "b3", abstention_response="second"),
        ],
    )
    assert decision.abstention_response == "first"


def test_a_warning_decision_has_no_abstention_response():
    decision = combine("after_workflow", [evaluation("warn", "w", abstention_response="x")])
    assert decision.abstention_response is None
    assert "abstention_response" not in decision.to_dict()


def test_empty_reasons_are_skipped_and_a_decision_always_explains_itself():
    decision = combine("after_workflow", [evaluation("block", ""), evaluation("block", "b")])
    assert decision.reason == "b"
    assert combine("after_workflow", [evaluation("block", "")]).reason == "Blocked by policy"
    assert combine("after_workflow", [evaluation("warn", "")]).reason == "Warned by policy"
    assert combine("after_workflow", [evaluation("allow", "")]).reason == "Allowed"


def test_combine_accepts_evaluations_added_by_the_services_layer():
    engine = evaluation("allow", "Grounding audit passed (3 citations)", policy_id=1)
    judge = evaluation("warn", "LLM judge score (0.4) below threshold (0.7)", 1, source="llm_judge")
    decision = combine("after_workflow", [engine, judge])
    assert decision.action == "warn"
    assert decision.reason == "LLM judge score (0.4) below threshold (0.7)"
    assert decision.to_dict()["evaluations"][1]["source"] == "llm_judge"
    assert "source" not in decision.to_dict()["evaluations"][0]


def test_combine_refuses_unknown_phases_and_actions():
    with pytest.raises(ValueError, match="Unknown phase"):
        combine("lunch", [])
    with pytest.raises(ValueError, match="Unknown action"):
        combine("after_workflow", [evaluation("deny", "x")])


# --- evaluate_phase ----------------------------------------------------------------------------


def test_the_design_decision_example():
    strict = policy(
        7,
        "Strict Research Grounding",
        require_source_grounding=True,
        min_grounding_score=0.8,
        min_citations=1,
        max_unsupported_claims=0,
        abstention_threshold=0.5,
        abstention_response=ABSTAIN,
        action_on_violation="block",
    )
    decision = evaluate_phase("after_workflow", [strict], RunState())
    reason = "Citations (0) below minimum (1); No source citations provided (grounding required)"
    assert decision.to_dict() == {
        "action": "block",
        "phase": "after_workflow",
        "reason": reason,
        "abstention_response": ABSTAIN,
        "evaluations": [
            {
                "policy_id": 7,
                "policy_name": "Strict Research Grounding",
                "category": "grounding",
                "phase": "after_workflow",
                "action": "block",
                "reason": reason,
                "metadata": {
                    "warnings": [
                        "Citations (0) below minimum (1)",
                        "No source citations provided (grounding required)",
                    ],
                    "citation_count": 0,
                },
            }
        ],
    }


def test_every_policy_is_evaluated_in_the_order_given():
    policies = [
        policy(3, min_citations=1),
        policy(1, min_citations=5, action_on_violation="block"),
        policy(2, min_citations=9, action_on_violation="block", abstention_response="Sorry."),
    ]
    decision = evaluate_phase("after_workflow", policies, RunState(citations=("a", "b")))
    assert [e.policy_id for e in decision.evaluations] == [3, 1, 2]
    assert [e.action for e in decision.evaluations] == ["allow", "block", "block"]
    assert decision.action == "block"
    assert decision.reason == "Citations (2) below minimum (5); Citations (2) below minimum (9)"
    assert decision.abstention_response == "Sorry."


def test_a_warning_policy_does_not_mask_a_blocking_one():
    policies = [policy(1, min_grounding_score=0.9), policy(2, action_on_violation="block")]
    decision = evaluate_phase("mid_execution", policies, RunState(grounding_scores=(0.8, 0.5)))
    assert decision.action == "block"
    assert decision.reason == "Grounding score (0.5) below threshold (0.7)"
    assert [e.reason for e in decision.evaluations] == [
        "Grounding score (0.8) below threshold (0.9)",
        "Grounding score (0.5) below threshold (0.7)",
    ]


def test_evaluations_name_the_policy_version_and_phase():
    decision = evaluate_phase("mid_execution", [policy(4, "RAG", version=3)], RunState())
    (only,) = decision.evaluations
    assert (only.policy_id, only.policy_name, only.policy_version) == (4, "RAG", 3)
    assert (only.category, only.phase, only.source) == ("grounding", "mid_execution", "engine")
    assert only.reason == "No grounding scores to check"


def test_no_policies_means_allow():
    decision = evaluate_phase("before_workflow", [], RunState())
    assert (decision.action, decision.reason, decision.evaluations) == (
        "allow",
        "No applicable policies",
        (),
    )


def test_before_workflow_allows_for_every_policy():
    policies = [policy(i, action_on_violation="block", min_citations=9) for i in range(5)]
    decision = evaluate_phase("before_workflow", policies, RunState())
    assert decision.action == "allow"
    assert decision.reason == "; ".join(["Grounding rules stored"] * 5)


def test_an_unknown_phase_is_a_value_error():
    with pytest.raises(ValueError, match="Unknown phase"):
        evaluate_phase("after_lunch", [policy(1)], RunState())


def test_an_unknown_category_is_reported():
    stray = dataclasses.replace(policy(1), category="retrieval")
    with pytest.raises(UnknownCategory):
        evaluate_phase("mid_execution", [stray], RunState())


def test_policies_with_rules_stored_before_a_rule_existed_still_evaluate():
    old = PolicySpec(1, "Old", "grounding", 1, {"min_citations": 2, "action_on_violation": "block"})
    decision = evaluate_phase("after_workflow", [old], RunState(citations=("a",)))
    assert decision.action == "block"
    assert decision.reason == "Citations (1) below minimum (2)"


def test_results_are_frozen():
    decision = evaluate_phase("mid_execution", [policy(1)], RunState(grounding_scores=(0.9,)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.action = "block"
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.evaluations[0].action = "block"
    assert type(decision.evaluations[0]) is Evaluation
    assert type(decision) is Decision


def test_engine_built_evaluations_equal_ordinary_ones():
    decision = evaluate_phase("mid_execution", [policy(1)], RunState(grounding_scores=(0.9,)))
    built = decision.evaluations[0]
    ordinary = Evaluation(**{f.name: getattr(built, f.name) for f in dataclasses.fields(built)})
    assert built == ordinary
    assert hash(decision.phase) and repr(built) == repr(ordinary)
    assert dataclasses.replace(built, action="warn").action == "warn"


def test_evaluation_to_dict_is_the_api_shape():
    decision = evaluate_phase("mid_execution", [policy(5, "P")], RunState(grounding_scores=(0.3,)))
    assert decision.evaluations[0].to_dict() == {
        "policy_id": 5,
        "policy_name": "P",
        "category": "grounding",
        "phase": "mid_execution",
        "action": "warn",
        "reason": "Grounding score (0.3) below threshold (0.7)",
        "metadata": {"score": 0.3, "threshold": 0.7},
    }


def test_run_state_defaults_are_empty():
    state = RunState()
    assert state.grounding_scores == () and state.citations == () and state.sources == ()
    assert state.unsupported_claims == () and state.output_confidence is None
    assert state.output is None
