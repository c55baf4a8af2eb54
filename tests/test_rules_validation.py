"""Validating the rules an admin submits, and filling in defaults. Pure tests, no database."""

import math

import pytest

from policies.categories import (
    CATEGORIES,
    Category,
    RuleSpec,
    RuleValidationError,
    UnknownCategory,
    get_category,
    register,
)

GROUNDING = get_category("grounding")

SEED_DEFAULTS = {
    "require_source_grounding": False,
    "min_grounding_score": 0.7,
    "min_citations": 1,
    "max_unsupported_claims": None,
    "factual_consistency_check": False,
    "abstention_threshold": None,
    "abstention_response": None,
    "action_on_violation": "warn",
    "score_relevance_floor": None,
    "score_eval_mode": "all",
    "score_top_n": 3,
    "llm_grounding_check": False,
    "llm_grounding_model": "gpt-4o-mini",
    "llm_grounding_threshold": 0.7,
    "llm_grounding_criteria": "",
    "llm_grounding_phase": "mid_execution",
}
# The verifier options (docs/verifier.md) (issue 4), after the docs/grounding-policies.md rules.
VERIFIER_DEFAULTS = {
    "nli_check": False,
    "nli_phase": "after_workflow",
    "entailment_threshold": 0.5,
    "contradiction_threshold": 0.5,
    "max_unverifiable_ratio": 0.5,
    "contradiction_action": "warn",
    "unverifiable_action": "warn",
    "nli_escalation": "off",
    "nli_escalation_model": "gpt-4o-mini",
    "nli_escalation_max_claims": 5,
}
# The context decision (docs/grounding-context.md) and the citation contract (docs/citations.md) (issue 5), after those.
CONTEXT_DEFAULTS = {
    "context_mode": "hybrid",
    "canonical_when_available": "augment_chunks",
    "include_retrieved_text": None,
    "max_context_chars": None,
}
CITATION_DEFAULTS = {
    "citation_quotes": "off",
    "max_citations": None,
    "citations_must_resolve": False,
}
# The score audit's rules (docs/score-audit.md), last.
SCORE_AUDIT_DEFAULTS = {
    "score_audit_rate": None,
    "score_audit_auditor": "tenant",
    "max_score_inflation": None,
    "score_audit_min_samples": 20,
}
ALL_DEFAULTS = {**SEED_DEFAULTS, **VERIFIER_DEFAULTS, **CONTEXT_DEFAULTS, **CITATION_DEFAULTS, **SCORE_AUDIT_DEFAULTS}

NUMBER_0_1 = "Must be a number between 0.0 and 1.0."
BOOLEAN = "Must be true or false."
WHOLE = "Must be a whole number."


def errors_for(raw) -> dict:
    with pytest.raises(RuleValidationError) as info:
        GROUNDING.clean_rules(raw)
    return info.value.errors


# --- the schema ------------------------------------------------------------------------------


def test_grounding_declares_every_seed_rule_with_its_default_in_form_order():
    assert [spec.name for spec in GROUNDING.rules][: len(SEED_DEFAULTS)] == list(SEED_DEFAULTS)
    assert [spec.name for spec in GROUNDING.rules] == list(ALL_DEFAULTS)
    assert GROUNDING.effective_rules({}) == ALL_DEFAULTS


def test_rule_types_match_the_seed():
    types = {spec.name: spec.type for spec in GROUNDING.rules}
    assert types["require_source_grounding"] == "boolean"
    assert types["min_grounding_score"] == "number"
    assert types["min_citations"] == "integer"
    assert types["max_unsupported_claims"] == "integer"
    assert types["action_on_violation"] == "enum"
    assert types["score_eval_mode"] == "enum"
    assert types["llm_grounding_model"] == "string"
    assert GROUNDING.rule("score_eval_mode").choices == ("all", "average", "top_n")
    assert GROUNDING.rule("llm_grounding_phase").choices == (
        "mid_execution",
        "after_workflow",
        "both",
    )


def test_every_rule_has_a_label_and_one_line_help():
    for spec in GROUNDING.rules:
        assert spec.label and spec.help, spec.name
        assert "\n" not in spec.help, spec.name


def test_rule_specs_describe_themselves_for_forms():
    assert GROUNDING.rule("min_grounding_score").as_dict() == {
        "name": "min_grounding_score",
        "label": "Minimum grounding score",
        "type": "number",
        "default": 0.7,
        "help": GROUNDING.rule("min_grounding_score").help,
        "nullable": True,
        "minimum": 0.0,
        "maximum": 1.0,
    }
    assert GROUNDING.rule("score_eval_mode").as_dict()["choices"] == ["all", "average", "top_n"]


def test_the_registry_knows_grounding_only():
    assert list(CATEGORIES) == ["grounding"]
    assert get_category("grounding") is GROUNDING
    assert GROUNDING.phases == ("before_workflow", "mid_execution", "after_workflow")


@pytest.mark.parametrize("name", ["retrieval", "", "GROUNDING", None, ["grounding"]])
def test_an_unknown_category_is_a_key_error(name):
    with pytest.raises(UnknownCategory) as info:
        get_category(name)
    assert isinstance(info.value, KeyError)
    assert "Unknown category" in str(info.value)


def test_a_new_category_is_data_driven():
    class Tone(Category):
        name = "tone_test"
        label = "Tone"
        rules = (
            RuleSpec(name="max_exclamations", label="Max !", type="integer", default=2, minimum=0, help="How loud."),
        )

        def check(self, phase):
            return None

    tone = Tone()
    try:
        register(tone)
        assert get_category("tone_test") is tone
        assert tone.clean_rules({"max_exclamations": 0}) == {"max_exclamations": 0}
        assert tone.effective_rules({}) == {"max_exclamations": 2}
        with pytest.raises(RuleValidationError):
            tone.clean_rules({"max_exclamations": -1})
    finally:
        CATEGORIES.pop("tone_test")


def test_a_bad_rule_spec_fails_at_import_time():
    with pytest.raises(ValueError):
        RuleSpec(name="x", label="X", type="float", default=0, help="h")
    with pytest.raises(ValueError):
        RuleSpec(name="x", label="X", type="enum", default="a", help="h")


# --- what is accepted, and how it is stored ---------------------------------------------------


def test_empty_rules_are_valid_and_take_every_default():
    assert GROUNDING.clean_rules({}) == {}
    assert GROUNDING.effective_rules(GROUNDING.clean_rules({})) == ALL_DEFAULTS


def test_clean_rules_returns_only_the_submitted_rules():
    assert GROUNDING.clean_rules({"min_citations": 2}) == {"min_citations": 2}


def test_the_seed_api_example_is_valid():
    raw = {
        "require_source_grounding": True,
        "min_grounding_score": 0.8,
        "min_citations": 2,
        "max_unsupported_claims": 0,
        "abstention_threshold": 0.5,
        "action_on_violation": "block",
    }
    assert GROUNDING.clean_rules(raw) == raw


def test_the_seed_llm_judge_example_is_valid():
    raw = {
        "require_source_grounding": True,
        "min_grounding_score": 0.7,
        "min_citations": 2,
        "max_unsupported_claims": 0,
        "abstention_threshold": 0.5,
        "action_on_violation": "block",
        "llm_grounding_check": True,
        "llm_grounding_model": "gpt-4o-mini",
        "llm_grounding_threshold": 0.7,
        "llm_grounding_phase": "after_workflow",
    }
    assert GROUNDING.clean_rules(raw) == raw


def test_numbers_are_stored_as_floats():
    cleaned = GROUNDING.clean_rules({"min_grounding_score": 1, "score_relevance_floor": 0})
    assert cleaned == {"min_grounding_score": 1.0, "score_relevance_floor": 0.0}
    assert all(type(value) is float for value in cleaned.values())


@pytest.mark.parametrize(
    "name, value",
    [
        ("min_grounding_score", None),
        ("max_unsupported_claims", None),
        ("abstention_threshold", None),
        ("abstention_response", None),
        ("score_relevance_floor", None),
        ("max_unsupported_claims", 0),
        ("min_citations", 0),
        ("score_top_n", 1),
        ("min_grounding_score", 0.0),
        ("min_grounding_score", 1.0),
        ("abstention_response", "x" * 2000),
        ("llm_grounding_criteria", "x" * 2000),
        ("llm_grounding_criteria", ""),
        ("llm_grounding_model", "claude-sonnet-4-20250514"),
        ("llm_grounding_model", "llama-3.1-8b-instant"),
        ("llm_grounding_model", "mixtral-8x7b-32768"),
        ("llm_grounding_model", "gpt-" + "x" * 196),
        ("factual_consistency_check", True),
        ("llm_grounding_phase", "both"),
        ("score_eval_mode", "top_n"),
    ],
)
def test_valid_values_are_accepted(name, value):
    assert GROUNDING.clean_rules({name: value}) == {name: value}


def test_cleaned_rules_come_back_in_schema_order():
    cleaned = GROUNDING.clean_rules({"score_top_n": 2, "require_source_grounding": True})
    assert list(cleaned) == ["require_source_grounding", "score_top_n"]


def test_effective_rules_drop_rules_no_longer_in_the_schema():
    assert "retired_rule" not in GROUNDING.effective_rules({"retired_rule": 1})


def test_effective_rules_do_not_share_state_between_calls():
    first = GROUNDING.effective_rules({})
    first["min_citations"] = 50
    assert GROUNDING.effective_rules({})["min_citations"] == 1


# --- what is refused, and what the admin is told ----------------------------------------------

INVALID = [
    # (rule, value, message)
    ("require_source_grounding", 1, BOOLEAN),
    ("require_source_grounding", "true", BOOLEAN),
    ("require_source_grounding", None, BOOLEAN),
    ("factual_consistency_check", 0, BOOLEAN),
    ("llm_grounding_check", "yes", BOOLEAN),
    ("min_grounding_score", True, NUMBER_0_1),
    ("min_grounding_score", "0.7", NUMBER_0_1),
    ("min_grounding_score", math.nan, NUMBER_0_1),
    ("min_grounding_score", math.inf, NUMBER_0_1),
    ("min_grounding_score", -math.inf, NUMBER_0_1),
    ("min_grounding_score", 1.01, NUMBER_0_1),
    ("min_grounding_score", -0.1, NUMBER_0_1),
    ("min_grounding_score", 10**400, NUMBER_0_1),
    ("min_grounding_score", [0.7], NUMBER_0_1),
    ("abstention_threshold", 2, NUMBER_0_1),
    ("score_relevance_floor", False, NUMBER_0_1),
    ("llm_grounding_threshold", None, NUMBER_0_1),
    ("llm_grounding_threshold", 1.5, NUMBER_0_1),
    ("min_citations", True, WHOLE),
    ("min_citations", 2.0, WHOLE),
    ("min_citations", 1.5, WHOLE),
    ("min_citations", "2", WHOLE),
    ("min_citations", None, WHOLE),
    ("min_citations", -1, "Must be a whole number between 0 and 1000000."),
    ("max_unsupported_claims", False, WHOLE),
    ("max_unsupported_claims", -1, "Must be a whole number between 0 and 1000000."),
    ("score_top_n", 0, "Must be a whole number between 1 and 1000000."),
    ("score_top_n", 10**7, "Must be a whole number between 1 and 1000000."),
    ("action_on_violation", "deny", "Must be one of: warn, block."),
    ("action_on_violation", "BLOCK", "Must be one of: warn, block."),
    ("action_on_violation", None, "Must be one of: warn, block."),
    ("score_eval_mode", "median", "Must be one of: all, average, top_n."),
    ("score_eval_mode", 3, "Must be one of: all, average, top_n."),
    ("llm_grounding_phase", "before_workflow", "Must be one of: mid_execution, after_workflow, both."),
    ("abstention_response", 42, "Must be a string."),
    ("abstention_response", "x" * 2001, "Must be at most 2000 characters."),
    ("abstention_response", "nul\x00byte", "Must not contain null characters."),
    ("abstention_response", "lone \ud800 surrogate", "Must be valid Unicode text."),
    ("llm_grounding_criteria", None, "Must be a string."),
    ("llm_grounding_criteria", "x" * 2001, "Must be at most 2000 characters."),
]

MODEL = "Must be a model name starting with gpt-, claude-, llama- or mixtral-."


@pytest.mark.parametrize("name, value, message", INVALID, ids=[f"{n}={v!r:.20}" for n, v, _ in INVALID])
def test_invalid_values_are_refused_with_a_message_naming_the_problem(name, value, message):
    assert errors_for({name: value}) == {name: [message]}


@pytest.mark.parametrize(
    "model",
    ["o1-mini", "gemini-pro", "GPT-4o", "gpt-", "claude", " gpt-4o", "gpt-4o mini", "", None, 4],
)
def test_judge_models_must_use_a_supported_provider_prefix(model):
    errors = errors_for({"llm_grounding_model": model})
    expected = MODEL if isinstance(model, str) else "Must be a string."
    assert errors == {"llm_grounding_model": [expected]}


def test_judge_model_names_are_limited_to_200_characters():
    assert errors_for({"llm_grounding_model": "gpt-" + "x" * 197}) == {
        "llm_grounding_model": ["Must be at most 200 characters."]
    }


def test_unknown_rules_are_refused():
    assert errors_for({"min_score": 0.7}) == {"min_score": ["Unknown rule."]}
    assert errors_for({"Min_Citations": 1}) == {"Min_Citations": ["Unknown rule."]}


@pytest.mark.parametrize("raw", [None, [], "min_citations=1", 3, [("min_citations", 1)]])
def test_rules_must_be_an_object(raw):
    assert errors_for(raw) == {"rules": ["Must be an object mapping rule names to values."]}


def test_every_problem_is_reported_at_once():
    errors = errors_for(
        {
            "min_grounding_score": 2,
            "min_citations": True,
            "score_eval_mode": "mode",
            "llm_grounding_model": "gemini-pro",
            "bogus": 1,
            "action_on_violation": "block",  # valid: not reported
        }
    )
    assert errors == {
        "min_grounding_score": [NUMBER_0_1],
        "min_citations": [WHOLE],
        "score_eval_mode": ["Must be one of: all, average, top_n."],
        "llm_grounding_model": [MODEL],
        "bogus": ["Unknown rule."],
    }


def test_the_error_message_names_the_fields():
    with pytest.raises(RuleValidationError) as info:
        GROUNDING.clean_rules({"min_citations": -1, "bogus": True})
    assert "min_citations" in str(info.value)
    assert "bogus: Unknown rule." in str(info.value)


@pytest.mark.parametrize(
    "rules,field,message",
    [
        ({"score_audit_rate": 1.5}, "score_audit_rate", NUMBER_0_1),
        ({"max_score_inflation": -0.1}, "max_score_inflation", NUMBER_0_1),
        ({"max_score_inflation": "0.3"}, "max_score_inflation", NUMBER_0_1),
        ({"score_audit_min_samples": 0}, "score_audit_min_samples", None),
        ({"score_audit_min_samples": 2.5}, "score_audit_min_samples", None),
    ],
)
def test_score_audit_rules_are_validated(rules, field, message):
    errors = errors_for(rules)
    assert field in errors
    if message is not None:
        assert errors[field] == [message]
