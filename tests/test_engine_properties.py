"""Properties of the engine that must hold for every valid policy and every report.

Hypothesis generates rules from the category's own RuleSpecs, so a rule added to the schema is
covered here without touching this file. Pure tests, no database.
"""

import json
import operator

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from policies.categories import get_category
from policies.categories.grounding import NO_CITATIONS
from policies.engine import (
    ACTIONS,
    PHASES,
    Evaluation,
    PolicySpec,
    RunState,
    combine,
    evaluate_phase,
)

GROUNDING = get_category("grounding")
SEVERITY = {action: level for level, action in enumerate(ACTIONS)}

# No deadline: timings on a loaded CI machine say nothing about correctness. Applied per test
# rather than as a loaded profile, which would leak into every other module in the session.
engine_settings = settings(deadline=None, max_examples=150)

# Round values as well as arbitrary floats, so scores meet thresholds and floors exactly.
GRID = (0.0, 0.2, 0.35, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
unit = st.sampled_from(GRID) | st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40)


def rule_value(spec):
    if spec.type == "boolean":
        values = st.booleans()
    elif spec.type == "number":
        values = st.sampled_from(GRID) | st.floats(spec.minimum, spec.maximum, allow_nan=False)
    elif spec.type == "integer":
        values = st.integers(spec.minimum, min(spec.maximum, spec.minimum + 12))
    elif spec.type == "enum":
        values = st.sampled_from(spec.choices)
    elif spec.prefixes:
        names = st.from_regex(r"[a-z0-9.\-]{1,20}", fullmatch=True)
        values = st.builds(operator.add, st.sampled_from(spec.prefixes), names)
    else:
        values = text
    return st.none() | values if spec.nullable else values


# Any subset of the rules, each with a valid value: what an admin can submit.
raw_rules = st.fixed_dictionaries({}, optional={spec.name: rule_value(spec) for spec in GROUNDING.rules})
effective_rules = raw_rules.map(lambda raw: GROUNDING.effective_rules(GROUNDING.clean_rules(raw)))

states = st.builds(
    RunState,
    grounding_scores=st.lists(unit, max_size=8).map(tuple),
    citations=st.lists(text, max_size=5).map(tuple),
    unsupported_claims=st.lists(text, max_size=5).map(tuple),
    output_confidence=st.none() | unit,
)


def violations(outcome) -> set[str]:
    return set(outcome.metadata.get("warnings", ())) if outcome.action != "allow" else set()


@engine_settings
@given(raw=raw_rules)
def test_every_generated_policy_is_accepted_and_cleaning_is_idempotent(raw):
    cleaned = GROUNDING.clean_rules(raw)
    assert GROUNDING.clean_rules(cleaned) == cleaned
    effective = GROUNDING.effective_rules(cleaned)
    assert GROUNDING.clean_rules(effective) == effective


@engine_settings
@given(rules=effective_rules, state=states, phase=st.sampled_from(PHASES))
def test_evaluate_never_raises_and_always_explains_itself(rules, state, phase):
    outcome = GROUNDING.evaluate(phase, rules, state)
    assert outcome.action in ACTIONS
    assert isinstance(outcome.reason, str) and outcome.reason
    json.dumps(outcome.metadata, allow_nan=False)  # stored and returned as JSON
    if outcome.action == "block":
        assert outcome.reason
    if outcome.abstention_response is not None:
        assert outcome.action == "block"
        assert outcome.abstention_response == rules["abstention_response"]
    if phase == "before_workflow":
        assert outcome.action == "allow"
    if outcome.action != "allow":
        assert outcome.action == rules["action_on_violation"]


@engine_settings
@given(rules=effective_rules, state=states, data=st.data())
def test_raising_a_score_never_turns_allow_into_a_violation(rules, state, data):
    assume(state.grounding_scores)
    scores = list(state.grounding_scores)
    index = data.draw(st.integers(0, len(scores) - 1))
    raised = data.draw(st.sampled_from([g for g in GRID if g >= scores[index]]) | st.floats(scores[index], 1.0))
    floor = rules["score_relevance_floor"]
    threshold = rules["min_grounding_score"]
    # The one exception is the seed's floor semantics: a result lifted from below the floor
    # becomes relevant and is checked, so lifting it only part of the way can flag it.
    if floor is not None and threshold is not None and scores[index] < floor <= raised:
        assume(raised >= threshold)
    before = GROUNDING.evaluate("mid_execution", rules, state)
    scores[index] = raised
    after = GROUNDING.evaluate("mid_execution", rules, RunState(grounding_scores=tuple(scores)))
    if before.action == "allow":
        assert after.action == "allow", (before.reason, after.reason)


def test_lifting_a_score_just_above_the_floor_gets_it_checked():
    # The counterexample the property above excludes, pinned so the exception stays deliberate.
    rules = GROUNDING.effective_rules({"score_relevance_floor": 0.5})
    tail = GROUNDING.evaluate("mid_execution", rules, RunState(grounding_scores=(0.9, 0.3)))
    relevant = GROUNDING.evaluate("mid_execution", rules, RunState(grounding_scores=(0.9, 0.6)))
    assert (tail.action, relevant.action) == ("allow", "warn")


@engine_settings
@given(rules=effective_rules, state=states, citation=text)
def test_adding_a_citation_never_adds_a_citation_violation(rules, state, citation):
    # A property of the count rules (docs/grounding-policies.md). The citation contract
    # (docs/citations.md) is not monotonic by
    # design: one more citation can exceed max_citations or fail to resolve. It has its own
    # tests in test_engine_citations.py.
    rules = {**rules, "max_citations": None, "citation_quotes": "off", "citations_must_resolve": False}
    before = GROUNDING.evaluate("after_workflow", rules, state)
    more = RunState(
        citations=state.citations + (citation,),
        unsupported_claims=state.unsupported_claims,
        output_confidence=state.output_confidence,
    )
    after = GROUNDING.evaluate("after_workflow", rules, more)

    def citation_problems(outcome):
        return {w for w in violations(outcome) if w.startswith("Citations (") or w == NO_CITATIONS}

    assert len(citation_problems(after)) <= len(citation_problems(before))
    assert NO_CITATIONS not in violations(after)
    assert violations(after) - citation_problems(after) == (violations(before) - citation_problems(before))
    assert SEVERITY[after.action] <= SEVERITY[before.action]
    assert after.metadata["citation_count"] == before.metadata["citation_count"] + 1


@engine_settings
@given(rules=effective_rules, state=states)
def test_dropping_an_unsupported_claim_never_adds_a_violation(rules, state):
    assume(state.unsupported_claims)
    fewer = RunState(
        citations=state.citations,
        unsupported_claims=state.unsupported_claims[1:],
        output_confidence=state.output_confidence,
    )
    before = GROUNDING.evaluate("after_workflow", rules, state)
    after = GROUNDING.evaluate("after_workflow", rules, fewer)
    assert SEVERITY[after.action] <= SEVERITY[before.action]


@engine_settings
@given(rules=effective_rules, state=states, confidence=unit)
def test_more_confidence_never_adds_a_violation(rules, state, confidence):
    assume(state.output_confidence is not None)
    # Drawn at or above the reported confidence (not filtered: hypothesis gives up on too many misses).
    confidence = state.output_confidence + confidence * (1.0 - state.output_confidence)
    surer = RunState(
        citations=state.citations,
        unsupported_claims=state.unsupported_claims,
        output_confidence=confidence,
    )
    before = GROUNDING.evaluate("after_workflow", rules, state)
    after = GROUNDING.evaluate("after_workflow", rules, surer)
    assert SEVERITY[after.action] <= SEVERITY[before.action]


@engine_settings
@given(all_rules=st.lists(effective_rules, max_size=6), state=states, phase=st.sampled_from(PHASES))
def test_a_decision_is_the_most_severe_evaluation(all_rules, state, phase):
    policies = [PolicySpec(i, f"P{i}", "grounding", 1, rules) for i, rules in enumerate(all_rules)]
    decision = evaluate_phase(phase, policies, state)
    assert [e.policy_id for e in decision.evaluations] == list(range(len(policies)))
    expected = max((e.action for e in decision.evaluations), key=SEVERITY.get, default="allow")
    assert decision.action == expected
    assert decision.reason
    if decision.evaluations:
        final = [e.reason for e in decision.evaluations if e.action == decision.action]
        assert decision.reason == "; ".join(final)
    if decision.abstention_response is not None:
        assert decision.action == "block"
    json.dumps(decision.to_dict(), allow_nan=False)


evaluations = st.builds(
    Evaluation,
    policy_id=st.integers(1, 1000),
    policy_name=text,
    category=st.just("grounding"),
    policy_version=st.integers(1, 10),
    phase=st.just("after_workflow"),
    action=st.sampled_from(ACTIONS),
    reason=text,
    metadata=st.just({}),
    abstention_response=st.none() | text,
)


@engine_settings
@given(items=st.lists(evaluations, max_size=8))
def test_combine_block_always_has_a_reason_and_abstains_only_when_blocking(items):
    decision = combine("after_workflow", items)
    assert decision.reason
    if decision.action == "block":
        blocking = [e.abstention_response for e in items if e.action == "block"]
        assert decision.abstention_response == next((r for r in blocking if r is not None), None)
    else:
        assert decision.abstention_response is None
