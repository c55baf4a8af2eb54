"""Claim extraction: sentence splitting and the non-factual filters of docs/verifier.md (pure, no model)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judges.verifier.claims import (
    extract_claims,
    non_factual_reason,
    split_sentences,
    strip_code_blocks,
)


def test_plain_sentences_are_claims():
    text = "The API limit is 1,000 requests per minute. Free users get 100. Paid plans start at $20."
    assert extract_claims(text) == [
        "The API limit is 1,000 requests per minute.",
        "Free users get 100.",
        "Paid plans start at $20.",
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "Is the limit 1000 requests per minute?",
        "Does the free tier include API access?",
        'Which plan should you choose?"',
    ],
)
def test_questions_are_dropped(sentence):
    assert non_factual_reason(sentence) == "question"
    assert extract_claims(f"The limit is 1000 requests. {sentence}") == ["The limit is 1000 requests."]


@pytest.mark.parametrize(
    "sentence",
    [
        "I think the limit is 1000 requests per minute.",
        "Maybe the limit is higher for enterprise plans.",
        "Perhaps the cache expires after an hour.",
        "It seems the service restarts nightly.",
        "I believe the warranty lasts two years.",
    ],
)
def test_hedges_are_dropped(sentence):
    assert non_factual_reason(sentence) == "hedge"
    assert extract_claims(sentence) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "I hope this helps with your migration.",
        "Let me know if you need anything else.",
        "Feel free to ask more questions about the API.",
        "Here's a summary of the pricing tiers.",
    ],
)
def test_meta_commentary_is_dropped(sentence):
    assert non_factual_reason(sentence) == "meta"
    assert extract_claims(sentence) == []


@pytest.mark.parametrize("sentence", ["Hello!", "Hi there!", "Sure!", "Great question!", "Of course."])
def test_greetings_are_dropped(sentence):
    assert non_factual_reason(sentence) == "greeting"
    assert extract_claims(f"{sentence} The limit is 1000 requests per minute.") == [
        "The limit is 1000 requests per minute."
    ]


def test_a_greeting_opening_a_factual_sentence_is_stripped():
    assert extract_claims("Of course, the free tier allows 500 requests per minute.") == [
        "The free tier allows 500 requests per minute."
    ]


def test_code_blocks_are_dropped():
    text = (
        "Use the client like this:\n"
        "```python\n"
        "client = Client(limit=1000)  # The limit is 1000. It is enforced.\n"
        "```\n"
        "The client retries failed requests three times.\n"
        "~~~\n"
        "curl https://example.invalid/v1/items\n"
        "~~~\n"
        "Responses are cached for 60 seconds."
    )
    claims = extract_claims(text)
    assert claims == ["The client retries failed requests three times.", "Responses are cached for 60 seconds."]
    assert "```" not in strip_code_blocks(text)


def test_an_unterminated_fence_drops_the_rest():
    assert extract_claims("The limit is 1000 requests.\n```\nx = 1. y = 2.") == ["The limit is 1000 requests."]


def test_inline_code_keeps_its_text():
    assert extract_claims("The `get()` method returns None for missing keys.") == [
        "The get() method returns None for missing keys."
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Many languages, e.g. Python and Ruby, are dynamically typed.",
        "The release, i.e. version 3.5, fixed the bug.",
        "The average rating is 3.5 out of 5 stars.",
        "Python 3.12.0 was released in October.",
        "Dr. Smith leads the cardiology department.",
        "Backups run at 2 a.m. every night.",
        "J. K. Rowling wrote seven Harry Potter books.",
        "The marathon distance is 42.195 km, standardised in 1921.",
    ],
)
def test_abbreviations_decimals_and_initials_do_not_split(text):
    assert [s.text for s in split_sentences(text)] == [text]
    assert extract_claims(text) == [text]


def test_splits_on_terminal_punctuation_and_newlines():
    text = "The tower is 330 metres tall! It opened in 1889.\nIt was the tallest structure until 1930"
    assert [s.text for s in split_sentences(text)] == [
        "The tower is 330 metres tall!",
        "It opened in 1889.",
        "It was the tallest structure until 1930",
    ]


def test_sentence_offsets_point_into_the_text():
    text = "First fact here. Second fact follows.\n- A bullet point claim."
    for sentence in split_sentences(text):
        assert text[sentence.start : sentence.end] == sentence.text


def test_bullets_and_headings_are_unwrapped_and_fragments_dropped():
    text = "## Pricing\n- Premium users get 1,000 requests per minute.\n- Free users get 100.\nSummary:"
    assert extract_claims(text) == ["Premium users get 1,000 requests per minute.", "Free users get 100."]


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "```\ncode only\n```"])
def test_empty_text_has_no_claims(text):
    assert extract_claims(text) == []


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300))
def test_extraction_never_fails_and_yields_clean_claims(text):
    claims = extract_claims(text)
    for claim in claims:
        assert claim.strip() == claim and claim
        assert "```" not in claim
        assert non_factual_reason(claim) is None


def test_a_time_zone_after_a_clock_time_is_no_new_sentence():
    text = "Phone support runs 9 a.m. to 6 p.m. CET, for Business customers only. We close at 5 p.m. Sales rose."
    assert [s.text for s in split_sentences(text)] == [
        "Phone support runs 9 a.m. to 6 p.m. CET, for Business customers only.",
        "We close at 5 p.m.",
        "Sales rose.",
    ]
