"""A value set against a limit the sources state (judges/verifier/facts/limits.py), and compound
words written with or without a hyphen (pure Python, no model)."""

import pytest

from judges.verifier.facts import analyse
from tests.verifier_support import align_texts

FREE = "The free tier allows 1,000 API calls per day and up to 3 projects. Paid plans start at 50,000 calls per day."


@pytest.mark.parametrize(
    "claim,held",
    [
        ("A user who needs 1,500 API calls a day would go over the limit.", True),
        ("A user who needs 800 API calls a day would go over the limit.", False),
        ("A user who needs 800 API calls a day stays within the limit.", True),
        ("A user who needs 1,500 API calls a day stays within the limit.", False),
        ("Making 1,200 API calls a day exceeds the daily quota.", True),
    ],
)
def test_a_value_over_or_within_the_sources_limit(claim, held):
    found = align_texts(claim, FREE.split(". ")[0] + ".", FREE)
    matched = [(c.describe(), s.describe()) for c, s in found.matched if c.kind == "quantity"]
    numbers = [c.reason for c in found.conflicts if c.kind == "number"]
    assert bool(matched) == held
    assert bool(numbers) != held


def test_another_plans_value_is_a_doubtful_rival_of_a_value_over_the_limit():
    claim = "A user who needs 1,500 API calls a day would go over the limit."
    found = align_texts(claim, "Paid plans start at 50,000 calls per day.", FREE)
    (conflict,) = [c for c in found.conflicts if c.kind == "number"]
    assert conflict.confidence <= 0.45


def test_a_value_stated_as_it_is_still_conflicts():
    found = align_texts("The free tier allows 1,500 API calls a day.", FREE.split(". ")[0] + ".")
    assert "number mismatch: claim says 1500 calls a day, source says 1000 calls a day" in [
        c.reason for c in found.conflicts
    ]


@pytest.mark.parametrize(
    "claim,source",
    [
        ("The free tier allows 1,000 calls a day.", "The free-tier plan allows 1,000 calls a day."),
        ("The free-tier plan allows 1,000 calls a day.", "The free tier plan allows 1,000 calls a day."),
    ],
)
def test_a_compound_with_or_without_its_hyphen(claim, source):
    assert align_texts(claim, source).uncovered == []


@pytest.mark.parametrize(
    "text,identifier",
    [
        ("Making 1,200 API calls a day is allowed.", False),
        ("Apollo 11 landed in 1969.", True),
        ("Boeing 747 jets fly.", True),
    ],
)
def test_an_opening_gerund_numbers_nothing(text, identifier):
    assert any(f.dim == "identifier" for f in analyse(text).facts) == identifier
