"""The citation contract (docs/citations.md) in the grounding category: quotes found in their sources, citations
that resolve to what the run reported, a maximum count; at after_workflow over the whole run and
at mid_execution for one report, without changing any reason of docs/grounding-policies.md.

Pure tests: no database, no Django.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.categories import get_category
from policies.categories.citations import MAX_FAILURES, MAX_LISTED_REASONS, normalise
from policies.engine import RunState

GROUNDING = get_category("grounding")

FED = {"id": "fed-2023", "text": "In March 2023 the Federal Reserve raised its benchmark rate by 25 basis points."}
IMF = {"id": "imf-9", "text": "The IMF expects global growth of 3.0% in 2023.\nRisks remain tilted to the downside."}
SOURCES = (FED, IMF)


def evaluate(phase, raw_rules=None, **state):
    rules = GROUNDING.effective_rules(GROUNDING.clean_rules(raw_rules or {}))
    return GROUNDING.evaluate(phase, rules, RunState(**state))


def after(raw_rules=None, citations=(), sources=SOURCES, **state):
    return evaluate("after_workflow", raw_rules, citations=tuple(citations), sources=tuple(sources), **state)


def mid(raw_rules=None, scores=(), citations=(), sources=SOURCES):
    return evaluate(
        "mid_execution", raw_rules, grounding_scores=tuple(scores), citations=tuple(citations), sources=tuple(sources)
    )


# --- quotes ------------------------------------------------------------------------------------------


def test_a_quote_found_in_its_source_passes():
    outcome = after(citations=[{"source_id": "fed-2023", "quote": "raised its benchmark rate by 25 basis points"}])
    assert (outcome.action, outcome.reason) == ("allow", "Grounding audit passed (1 citations)")
    assert outcome.metadata == {"citation_count": 1}


def test_a_quote_not_in_its_source_is_named_with_the_text_it_was_checked_against():
    citation = {"source_id": "fed-2023", "quote": "raised its benchmark rate by 50 basis points"}
    outcome = after({"action_on_violation": "block"}, citations=[citation])
    assert outcome.action == "block"
    assert outcome.reason == 'Citation "fed-2023" quote not found in source'
    assert outcome.metadata == {
        "warnings": ['Citation "fed-2023" quote not found in source'],
        "citation_count": 1,
        "citation_failures": [
            {"citation": citation, "problem": "quote_not_found", "source_id": "fed-2023", "source_text": FED["text"]}
        ],
    }


@pytest.mark.parametrize(
    "quote",
    [
        "RAISED ITS BENCHMARK RATE",  # case
        "the Federal   Reserve\nraised",  # whitespace runs and line breaks
        "global growth of 3.0% in 2023. Risks remain",  # across a line break in the source
        '"raised its benchmark rate"',  # the quote's own quotation marks
        "\u201craised its benchmark rate\u201d",  # curly ones
    ],
)
def test_quotes_match_after_normalising_whitespace_case_and_quote_marks(quote):
    source_id = "imf-9" if "growth" in quote else "fed-2023"
    assert after(citations=[{"source_id": source_id, "quote": quote}]).action == "allow"


def test_curly_and_straight_apostrophes_are_the_same_character():
    source = {"id": "doc", "text": "The bank\u2019s \u201cforward guidance\u201d changed."}
    citation = {"source_id": "doc", "quote": 'the bank\'s "forward guidance" changed'}
    assert after(citations=[citation], sources=[source]).action == "allow"
    assert normalise("A\u2018b\u2019 \u201cC\u201d\t\n D") == "a'b' \"c\" d"


def test_a_quote_is_checked_against_every_text_reported_under_its_id():
    sources = [{"id": "doc", "text": "first chunk"}, {"id": "doc", "text": "second chunk"}]
    assert after(citations=[{"source_id": "doc", "quote": "second chunk"}], sources=sources).action == "allow"


def test_a_quoted_citation_must_resolve_even_when_resolution_is_not_required():
    outcome = after(citations=[{"source_id": "wsj-1", "quote": "rates rose"}])
    assert outcome.reason == 'Citation "wsj-1" does not resolve to a retrieved source'
    assert outcome.metadata["citation_failures"][0]["problem"] == "unresolved"


def test_a_quote_against_a_source_reported_without_text_is_not_found():
    outcome = after(citations=[{"source_id": "doc", "quote": "x"}], sources=[{"id": "doc", "text": ""}])
    assert outcome.reason == 'Citation "doc" quote not found in source'
    assert outcome.metadata["citation_failures"][0]["source_text"] == ""


def test_required_quotes_flag_every_citation_without_one():
    rules = {"citation_quotes": "required", "min_citations": 0}
    outcome = after(
        rules, citations=["fed-2023", {"source_id": "imf-9"}, {"source_id": "imf-9", "quote": "global growth of 3.0%"}]
    )
    assert outcome.reason == (
        'Citation "fed-2023" has no quote (quotes required); Citation "imf-9" has no quote (quotes required)'
    )
    assert [f["problem"] for f in outcome.metadata["citation_failures"]] == ["missing_quote", "missing_quote"]


def test_quotes_off_leaves_unquoted_citations_alone():
    assert after(citations=["anything", {"source_id": "else"}]).action == "allow"


def test_the_source_text_in_metadata_is_truncated():
    source = {"id": "long", "text": "word " * 1000}
    outcome = after(citations=[{"source_id": "long", "quote": "absent"}], sources=[source])
    text = outcome.metadata["citation_failures"][0]["source_text"]
    assert len(text) == 500 and text.endswith("…")


# --- resolution --------------------------------------------------------------------------------------


def test_with_resolution_required_every_citation_must_name_a_reported_source():
    rules = {"citations_must_resolve": True, "action_on_violation": "block"}
    outcome = after(rules, citations=["fed-2023", "imf-9", {"source_id": "imf-9", "quote": "downside"}])
    assert (outcome.action, outcome.reason) == ("allow", "Grounding audit passed (3 citations)")

    outcome = after(rules, citations=["fed-2023", "Some Blog", {"source_id": "ghost-1"}])
    assert outcome.action == "block"
    assert outcome.reason == (
        'Citation "Some Blog" does not resolve to a retrieved source; '
        'Citation "ghost-1" does not resolve to a retrieved source'
    )
    assert outcome.metadata["citation_failures"] == [
        {"citation": "Some Blog", "problem": "unresolved", "source_id": "Some Blog"},
        {"citation": {"source_id": "ghost-1"}, "problem": "unresolved", "source_id": "ghost-1"},
    ]


def test_without_resolution_required_unquoted_citations_need_no_source():
    assert after(citations=["Federal Reserve Report"], sources=()).action == "allow"


def test_a_missing_quote_and_an_unresolved_id_are_both_named():
    rules = {"citations_must_resolve": True, "citation_quotes": "required"}
    outcome = after(rules, citations=["ghost"])
    assert outcome.reason == (
        'Citation "ghost" has no quote (quotes required); Citation "ghost" does not resolve to a retrieved source'
    )


# --- the count -------------------------------------------------------------------------------------


def test_more_citations_than_the_maximum_is_a_violation():
    outcome = after({"max_citations": 6}, citations=[f"s{n}" for n in range(7)])
    assert outcome.reason == "Citations (7) exceed maximum (6)"
    assert outcome.metadata == {"warnings": ["Citations (7) exceed maximum (6)"], "citation_count": 7}


def test_exactly_the_maximum_passes():
    assert after({"max_citations": 6}, citations=[f"s{n}" for n in range(6)]).action == "allow"


# --- order, and the seed's reasons untouched ---------------------------------------------------------


def test_citation_problems_come_after_the_seed_four_in_order():
    rules = {
        "min_citations": 5,
        "max_unsupported_claims": 0,
        "abstention_threshold": 0.5,
        "max_citations": 1,
        "action_on_violation": "block",
    }
    outcome = after(
        rules,
        citations=["a", {"source_id": "fed-2023", "quote": "cut rates"}],
        unsupported_claims=("x",),
        output_confidence=0.2,
    )
    assert outcome.metadata["warnings"] == [
        "Citations (2) below minimum (5)",
        "Unsupported claims (1) exceeds max (0)",
        "Output confidence (0.2) below abstention threshold (0.5)",
        "Citations (2) exceed maximum (1)",
        'Citation "fed-2023" quote not found in source',
    ]
    assert outcome.reason == "; ".join(outcome.metadata["warnings"])
    assert outcome.metadata["abstention_triggered"] is True


def test_seed_reasons_are_unchanged_with_every_citation_rule_on_and_honest_citations():
    rules = {
        "min_citations": 3,
        "require_source_grounding": True,
        "citations_must_resolve": True,
        "max_citations": 10,
        "citation_quotes": "off",
    }
    outcome = after(rules, citations=["fed-2023"])
    assert outcome.reason == "Citations (1) below minimum (3)"
    outcome = after(rules, citations=[], sources=())
    assert outcome.reason == "Citations (0) below minimum (3); No source citations provided (grounding required)"


# --- mid_execution: one report's citations ------------------------------------------------------------


def test_mid_execution_reasons_are_the_seed_ones_when_citations_are_honest():
    citations = [{"source_id": "fed-2023", "quote": "Federal Reserve raised"}]
    outcome = mid({"min_grounding_score": 0.7}, scores=(0.9, 0.42), citations=citations)
    assert outcome.reason == "Grounding score (0.42) below threshold (0.7)"
    assert outcome.metadata == {"score": 0.42, "threshold": 0.7}
    assert mid(scores=(0.9,), citations=citations).reason == "Grounding scores passed (1 checked)"


def test_mid_execution_flags_a_bad_quote_even_when_scores_pass():
    outcome = mid(
        {"action_on_violation": "block"}, scores=(0.9,), citations=[{"source_id": "imf-9", "quote": "growth of 4%"}]
    )
    assert (outcome.action, outcome.reason) == ("block", 'Citation "imf-9" quote not found in source')
    assert outcome.metadata["checked"] == 1
    assert outcome.metadata["warnings"] == ['Citation "imf-9" quote not found in source']
    assert outcome.metadata["citation_failures"][0]["source_text"] == IMF["text"]


def test_mid_execution_appends_citation_problems_after_the_score_violation():
    outcome = mid({"max_citations": 1}, scores=(0.42,), citations=["a", "b"])
    assert outcome.reason == "Grounding score (0.42) below threshold (0.7); Citations (2) exceed maximum (1)"
    assert outcome.metadata == {
        "score": 0.42,
        "threshold": 0.7,
        "warnings": ["Grounding score (0.42) below threshold (0.7)", "Citations (2) exceed maximum (1)"],
    }


def test_mid_execution_checks_citations_without_scores():
    outcome = mid({"citations_must_resolve": True}, citations=["ghost"])
    assert outcome.reason == 'Citation "ghost" does not resolve to a retrieved source'


def test_mid_execution_without_citations_is_the_seed_behaviour():
    assert mid({"citations_must_resolve": True, "citation_quotes": "required"}).reason == "No grounding scores to check"


# --- bounded output ------------------------------------------------------------------------------


def test_many_failures_list_a_few_reasons_and_keep_a_bounded_metadata():
    citations = [f"ghost-{n}" for n in range(120)]
    outcome = after({"citations_must_resolve": True, "min_citations": 0}, citations=citations)
    listed = [f'Citation "ghost-{n}" does not resolve to a retrieved source' for n in range(MAX_LISTED_REASONS)]
    assert outcome.reason == "; ".join([*listed, f"and {120 - MAX_LISTED_REASONS} more citation problems"])
    assert len(outcome.metadata["citation_failures"]) == MAX_FAILURES
    assert outcome.metadata["citation_failures_total"] == 120


def test_the_same_citation_cited_twice_is_reported_once():
    outcome = after({"citations_must_resolve": True}, citations=["ghost", "ghost"])
    assert outcome.reason == 'Citation "ghost" does not resolve to a retrieved source'
    assert outcome.metadata["citation_count"] == 2


def test_a_long_citation_is_shortened_in_the_reason_but_kept_whole_in_metadata():
    long_id = "x" * 300
    outcome = after({"citations_must_resolve": True}, citations=[long_id])
    assert outcome.reason == f'Citation "{"x" * 99}…" does not resolve to a retrieved source'
    assert outcome.metadata["citation_failures"][0]["citation"] == long_id


# --- properties ------------------------------------------------------------------------------------

# Letters whose upper case folds back to the same letter (not Turkish dotless i, whose upper case
# is plain I): "case-insensitive" means the source's own text in another case.
words = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=8).filter(
    lambda w: w.upper().casefold() == w.casefold() == w.lower().casefold()
)


@settings(deadline=None, max_examples=200)
@given(parts=st.lists(words, min_size=3, max_size=12), data=st.data())
def test_any_span_of_the_source_quoted_with_different_spacing_case_or_quotes_is_found(parts, data):
    source = {"id": "doc", "text": " ".join(parts)}
    start = data.draw(st.integers(0, len(parts) - 1))
    end = data.draw(st.integers(start + 1, len(parts)))
    separators = data.draw(
        st.lists(st.sampled_from([" ", "  ", "\n", "\t "]), min_size=len(parts), max_size=len(parts))
    )
    quote = "".join(w + s for w, s in zip(parts[start:end], separators)).strip()
    quote = data.draw(st.sampled_from([quote, quote.upper(), quote.lower(), f'"{quote}"', f"\u201c{quote}\u201d"]))
    outcome = after(
        {"citation_quotes": "required", "citations_must_resolve": True},
        citations=[{"source_id": "doc", "quote": quote}],
        sources=[source],
    )
    assert outcome.action == "allow", (source, quote, outcome.reason)


@settings(deadline=None, max_examples=200)
@given(
    citations=st.lists(
        st.sampled_from(["fed-2023", "imf-9", "ghost"])
        | st.fixed_dictionaries(
            {"source_id": st.sampled_from(["fed-2023", "ghost"])},
            optional={"quote": st.sampled_from(["raised", "cut"])},
        ),
        max_size=6,
    ),
    dropped=st.integers(0, 5),
)
def test_dropping_a_citation_never_adds_a_per_citation_failure(citations, dropped):
    rules = {"citations_must_resolve": True, "citation_quotes": "required", "min_citations": 0}

    def failures(cited):
        found = after(rules, citations=cited).metadata.get("citation_failures", [])
        return {(f["source_id"], f["problem"]) for f in found}

    assert failures(citations[:dropped] + citations[dropped + 1 :]) <= failures(citations)
