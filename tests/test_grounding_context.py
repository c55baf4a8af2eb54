"""The context decision (docs/grounding-context.md) on the grounding rules: the mode matrix, its
fallbacks, truncation at
the exact boundary, the override in every mode, which policy's rules apply, and the SDK's copy
agreeing with the server's on random inputs.

Pure tests: no database, no Django.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundrule import context as sdk_context
from policies.categories import get_category
from policies.categories.grounding_context import (
    DEFAULT_CONTEXT_RULES,
    TRUNCATION_MARKER,
    GroundingDecision,
    context_for,
    decide_grounding,
    grounding_context,
)
from policies.engine import PolicySpec

GROUNDING = get_category("grounding")
TEXT = "The supply temperature should be between 60-80C..."
DOCS = [{"id": "sop-12", "title": "Supply temperature SOP"}]


def rules(**context) -> dict:
    """Effective grounding rules, as the server holds them, with these context rules."""
    return GROUNDING.effective_rules(GROUNDING.clean_rules(context))


def decide(text=TEXT, docs=DOCS, **context) -> tuple[str, bool, bool]:
    decision = decide_grounding(text, docs, rules(**context))
    return decision.retrieved_text_for_prompt, decision.include_attachments, decision.include_retrieved_text


# --- the seed's matrix (both inputs present unless the row says otherwise) -----------------------

MATRIX = [
    # (row of the seed's table, rules, documents, (retrieved_text_for_prompt, include_attachments))
    ("chunks_only", {"context_mode": "chunks_only"}, DOCS, (TEXT, False)),
    ("attachments_only", {"context_mode": "attachments_only"}, DOCS, ("", True)),
    ("attachments_only (no docs available)", {"context_mode": "attachments_only"}, [], (TEXT, True)),
    (
        "hybrid + augment_chunks",
        {"context_mode": "hybrid", "canonical_when_available": "augment_chunks"},
        DOCS,
        (TEXT, True),
    ),
    (
        "hybrid + prefer_attachments (docs available)",
        {"context_mode": "hybrid", "canonical_when_available": "prefer_attachments"},
        DOCS,
        ("", True),
    ),
    (
        "hybrid + prefer_attachments (no docs)",
        {"context_mode": "hybrid", "canonical_when_available": "prefer_attachments"},
        [],
        (TEXT, True),
    ),
]


@pytest.mark.parametrize("row, context, docs, expected", MATRIX, ids=[m[0] for m in MATRIX])
def test_the_seed_mode_matrix(row, context, docs, expected):
    text, attachments = expected
    assert decide(TEXT, docs, **context) == (text, attachments, bool(text))


def test_the_default_policy_is_hybrid_augmenting_chunks():
    assert decide_grounding(TEXT, DOCS) == GroundingDecision(TEXT, True, True)
    assert decide_grounding(TEXT, DOCS, {}) == decide_grounding(TEXT, DOCS, rules())
    assert rules()["context_mode"] == "hybrid"
    assert rules()["canonical_when_available"] == "augment_chunks"


def test_seed_example_chunks_only_without_documents():
    assert decide(TEXT, None, context_mode="chunks_only") == (TEXT, False, True)


def test_seed_example_attachments_only():
    assert decide("The supply temperature should be...", DOCS, context_mode="attachments_only") == ("", True, False)


def test_seed_example_hybrid_with_truncation():
    long_text = "x" * 5000
    text, attachments, included = decide(
        long_text, DOCS * 2, context_mode="hybrid", canonical_when_available="augment_chunks", max_context_chars=2000
    )
    assert text == "x" * 2000 + "\n... [truncated]"
    assert (attachments, included) == (True, True)


def test_when_available_only_matters_in_hybrid_mode():
    for mode in ("chunks_only", "attachments_only"):
        assert decide(context_mode=mode, canonical_when_available="prefer_attachments") == decide(
            context_mode=mode, canonical_when_available="augment_chunks"
        )


# --- fallbacks -----------------------------------------------------------------------------------


@pytest.mark.parametrize("no_docs", [None, [], ()], ids=["none", "empty list", "empty tuple"])
def test_attachments_only_falls_back_to_the_text_when_no_document_was_prepared(no_docs):
    assert decide(TEXT, no_docs, context_mode="attachments_only") == (TEXT, True, True)


@pytest.mark.parametrize("no_docs", [None, []])
def test_prefer_attachments_falls_back_to_chunks_when_no_document_was_prepared(no_docs):
    assert decide(TEXT, no_docs, canonical_when_available="prefer_attachments") == (TEXT, True, True)


def test_a_fallback_is_truncated_like_any_included_text():
    assert decide("abcdef", [], context_mode="attachments_only", max_context_chars=3) == (
        "abc" + TRUNCATION_MARKER,
        True,
        True,
    )


@pytest.mark.parametrize("mode", ["chunks_only", "attachments_only", "hybrid"])
@pytest.mark.parametrize("missing", [None, ""])
def test_no_retrieved_text_is_never_included(mode, missing):
    assert decide(missing, [], context_mode=mode) == ("", mode != "chunks_only", False)


# --- truncation at the exact boundary -------------------------------------------------------------


def test_text_of_exactly_max_chars_is_left_alone():
    assert decide("a" * 10, max_context_chars=10) == ("a" * 10, True, True)


def test_one_char_over_max_is_cut_to_max_and_marked():
    text, _, included = decide("a" * 10 + "b", max_context_chars=10)
    assert text == "a" * 10 + "\n... [truncated]"
    assert included


def test_shorter_text_and_no_limit_are_untouched():
    assert decide("short", max_context_chars=10)[0] == "short"
    assert decide("y" * 100_000)[0] == "y" * 100_000


def test_max_of_one_keeps_one_character():
    assert decide("ab", max_context_chars=1)[0] == "a\n... [truncated]"


def test_truncation_counts_characters_not_bytes():
    assert decide("ééé📚x", max_context_chars=4)[0] == "ééé📚" + TRUNCATION_MARKER
    assert decide("ééé📚", max_context_chars=4)[0] == "ééé📚"


def test_truncation_never_touches_excluded_text():
    assert decide("a" * 50, DOCS, context_mode="attachments_only", max_context_chars=5) == ("", True, False)


# --- the include_retrieved_text override, in every mode -------------------------------------------

MODES = [
    ({"context_mode": "chunks_only"}, False),
    ({"context_mode": "attachments_only"}, True),
    ({"context_mode": "hybrid", "canonical_when_available": "augment_chunks"}, True),
    ({"context_mode": "hybrid", "canonical_when_available": "prefer_attachments"}, True),
]


@pytest.mark.parametrize("context, attachments", MODES, ids=lambda v: str(v))
@pytest.mark.parametrize("docs", [DOCS, []], ids=["docs", "no docs"])
def test_override_true_always_includes_the_text(context, attachments, docs):
    assert decide(TEXT, docs, include_retrieved_text=True, **context) == (TEXT, attachments, True)


@pytest.mark.parametrize("context, attachments", MODES, ids=lambda v: str(v))
@pytest.mark.parametrize("docs", [DOCS, []], ids=["docs", "no docs"])
def test_override_false_always_excludes_the_text_even_over_a_fallback(context, attachments, docs):
    assert decide(TEXT, docs, include_retrieved_text=False, **context) == ("", attachments, False)


def test_override_true_still_truncates():
    assert decide(
        "abcdef", DOCS, context_mode="attachments_only", include_retrieved_text=True, max_context_chars=2
    ) == ("ab" + TRUNCATION_MARKER, True, True)


def test_override_true_with_no_text_includes_nothing():
    assert decide("", DOCS, include_retrieved_text=True) == ("", True, False)


# --- the rules' schema ------------------------------------------------------------------------------


def test_context_rules_validate_like_every_other_rule():
    assert GROUNDING.clean_rules(
        {"context_mode": "chunks_only", "include_retrieved_text": None, "max_context_chars": 1}
    ) == {"context_mode": "chunks_only", "include_retrieved_text": None, "max_context_chars": 1}
    with pytest.raises(Exception) as info:
        GROUNDING.clean_rules(
            {
                "context_mode": "both",
                "canonical_when_available": "always",
                "include_retrieved_text": "yes",
                "max_context_chars": 0,
            }
        )
    assert info.value.errors == {
        "context_mode": ["Must be one of: chunks_only, attachments_only, hybrid."],
        "canonical_when_available": ["Must be one of: prefer_attachments, augment_chunks."],
        "include_retrieved_text": ["Must be true or false."],
        "max_context_chars": ["Must be a whole number between 1 and 100000000."],
    }


@pytest.mark.parametrize(
    "bad",
    [
        {"context_mode": "both"},
        {"canonical_when_available": "x"},
        {"include_retrieved_text": 1},
        {"max_context_chars": 0},
        {"max_context_chars": 2.5},
        {"max_context_chars": True},
    ],
)
def test_the_pure_function_refuses_rules_the_schema_would_refuse(bad):
    with pytest.raises(ValueError):
        decide_grounding(TEXT, DOCS, bad)


# --- which policy's context rules apply -------------------------------------------------------------


def spec(policy_id, category="grounding", **context) -> PolicySpec:
    return PolicySpec(policy_id, f"P{policy_id}", category, 1, rules(**context))


def test_no_policy_changing_a_context_rule_means_the_defaults():
    chosen, context = context_for([spec(1), spec(2, min_citations=3, context_mode="hybrid")])
    assert chosen is None
    assert context == DEFAULT_CONTEXT_RULES
    assert grounding_context([]) == {"policy_id": None, "policy_name": None, "rules": DEFAULT_CONTEXT_RULES}


def test_the_first_policy_in_order_that_changes_a_context_rule_wins_whole():
    specs = [spec(1), spec(2, max_context_chars=500), spec(3, context_mode="chunks_only")]
    assert grounding_context(specs) == {
        "policy_id": 2,
        "policy_name": "P2",
        "rules": {**DEFAULT_CONTEXT_RULES, "max_context_chars": 500},
    }


def test_a_policy_pinning_the_defaults_does_not_hide_a_later_choice():
    specs = [
        spec(1, context_mode="hybrid", canonical_when_available="augment_chunks"),
        spec(2, context_mode="attachments_only"),
    ]
    assert grounding_context(specs)["policy_id"] == 2


def test_an_override_set_to_false_counts_as_a_choice():
    assert grounding_context([spec(1), spec(2, include_retrieved_text=False)])["policy_id"] == 2


def test_other_categories_are_ignored():
    other = PolicySpec(1, "Other", "retrieval", 1, {"context_mode": "chunks_only"})
    assert grounding_context([other])["policy_id"] is None


# --- the SDK's copy agrees with the server's --------------------------------------------------------


def test_the_sdk_copy_shares_the_marker_and_defaults():
    assert sdk_context.TRUNCATION_MARKER == TRUNCATION_MARKER == "\n... [truncated]"
    assert sdk_context.DEFAULT_CONTEXT_RULES == DEFAULT_CONTEXT_RULES


texts = st.none() | st.text(max_size=60) | st.sampled_from(["", "a", "x" * 20])
documents = st.none() | st.lists(st.dictionaries(st.text(max_size=5), st.integers(), max_size=2), max_size=3)
context_rules = st.fixed_dictionaries(
    {},
    optional={
        "context_mode": st.sampled_from(["chunks_only", "attachments_only", "hybrid"]),
        "canonical_when_available": st.sampled_from(["prefer_attachments", "augment_chunks"]),
        "include_retrieved_text": st.none() | st.booleans(),
        "max_context_chars": st.none() | st.integers(1, 30),
    },
)


@settings(deadline=None, max_examples=500)
@given(text=texts, docs=documents, context=context_rules)
def test_server_and_sdk_decide_the_same_on_any_input(text, docs, context):
    server = decide_grounding(text, docs, context)
    sdk = sdk_context.decide_grounding(text, docs, context)
    assert (sdk.retrieved_text_for_prompt, sdk.include_attachments, sdk.include_retrieved_text) == (
        server.retrieved_text_for_prompt,
        server.include_attachments,
        server.include_retrieved_text,
    )
    assert sdk.to_dict() == server.to_dict()
    # and the decision's own invariants
    assert server.include_retrieved_text == bool(server.retrieved_text_for_prompt)
    limit = context.get("max_context_chars")
    if server.include_retrieved_text and limit is not None:
        assert len(server.retrieved_text_for_prompt) <= limit + len(TRUNCATION_MARKER)


@settings(deadline=None, max_examples=200)
@given(text=texts, docs=documents, context=context_rules)
def test_server_and_sdk_refuse_the_same_rules(text, docs, context):
    broken = {**context, "max_context_chars": 0}
    with pytest.raises(ValueError):
        decide_grounding(text, docs, broken)
    with pytest.raises(ValueError):
        sdk_context.decide_grounding(text, docs, broken)
