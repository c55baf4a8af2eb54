"""A value the sources give in another sentence, or that the claim itself gives for another of
its facts (judges/verifier/facts/align.py; pure Python, no model)."""

import pytest

from judges.verifier.facts import analyse
from tests.verifier_support import align_texts

SEASON = (
    "Season 2 is due out on Netflix on March 6th, 2019. "
    "Foxtel will be airing episodes weekly in Australia from March 4th."
)


def test_a_date_without_its_year_takes_the_year_the_sources_give():
    span = "Foxtel will be airing episodes weekly in Australia from March 4th."
    found = align_texts("It aired on March 4, 2019, in Australia.", span, SEASON)
    assert [(c.describe(), s.text) for c, s in found.matched if c.kind == "date"] == [("2019-03-04", "March 4th")]
    assert not found.missing
    assert not found.conflicts


@pytest.mark.parametrize(
    "doc",
    [
        "Foxtel will be airing episodes weekly in Australia from March 4th.",  # no year at all
        "Season 2 is due out on March 6th, 2018. Foxtel airs it weekly from March 4th.",  # another year
    ],
)
def test_without_the_claims_year_in_the_sources_the_date_is_still_missing(doc):
    span = doc.split(". ")[-1]
    found = align_texts("It aired on March 4, 2019, in Australia.", span, doc)
    assert [f.describe() for f in found.missing if f.kind == "date"] == ["2019-03-04"]
    assert not [c for c in found.conflicts if c.kind == "date"]  # never a conflict either


def test_another_day_of_the_month_is_not_the_claims_date():
    doc = "Season 2 is due out on March 6th, 2019. Foxtel airs it weekly from March 5th."
    found = align_texts("It aired on March 4, 2019, in Australia.", doc.split(". ")[-1], doc)
    assert [f.describe() for f in found.missing if f.kind == "date"] == ["2019-03-04"]


def test_the_claims_own_value_is_no_rival_of_its_other_value():
    claim = "A new siding was provided in 1956, and in 1958 reports recommended closing the station."
    span = "In 1956, a new siding was provided for the paper mill at the station."
    found = align_texts(claim, span, span + " In 1958, reports recommended that the station should be closed.")
    assert not [c.reason for c in found.conflicts if c.kind == "date"]


def test_a_rival_that_is_not_the_claims_value_still_conflicts():
    claim = "The museum moved to Berlin in 2015 after opening in Paris in 2010."
    found = align_texts(
        claim, "It moved to Berlin in 2012.", "The museum opened in Paris in 2010. It moved to Berlin in 2012."
    )
    assert "date mismatch: claim says 2015, source says 2012" in [c.reason for c in found.conflicts]


@pytest.mark.parametrize(
    "text,ml",
    [("5 teaspoons", 24.6), ("one teaspoon", 4.93), ("2 tablespoons", 29.6), ("1 tbsp", 14.8), ("3 tsp", 14.8)],
)
def test_spoons_are_volumes(text, ml):
    (fact,) = [f for f in analyse(f"Take {text} of the syrup.").facts if f.kind == "quantity"]
    assert fact.dim == "volume"
    assert fact.num_value * 1000 == pytest.approx(ml, abs=0.05)


def test_five_teaspoons_are_not_five_millilitres():
    claim = "For children aged 2 to 5, the recommended dose of the syrup is 5 teaspoons."
    span = "Children aged 2 to 5 years: give 5 ml of syrup up to three times a day."
    found = align_texts(claim, span, span)
    assert [c.reason for c in found.conflicts] == ["unit mismatch: claim says 5 tsp, source says 5 ml"]


@pytest.mark.parametrize(
    "span,doubtful",
    [
        ("The company reported revenue of 5 million dollars in 2023, up from 4 million.", True),
        ("The company has 250 employees.", False),
    ],
)
def test_a_bare_number_is_a_rival_of_a_count_only_where_the_count_is_named(span, doubtful):
    found = align_texts("The company has 300 employees.", span, span)
    (conflict,) = [c for c in found.conflicts if c.kind == "number"]
    assert (conflict.confidence <= 0.45) == doubtful


def test_a_default_written_as_a_bare_number_is_the_claims_value():
    span = (
        "`timeout` (int, optional): the number of seconds the client waits for a server response before "
        "raising a `TimeoutError`. Defaults to 30."
    )
    found = align_texts("The client raises a `TimeoutError` after waiting 30 seconds.", span, span)
    assert [(c.describe(), s.text) for c, s in found.matched if c.kind == "quantity"] == [("30 s", "30")]
    assert not found.missing
    other = align_texts("The client raises a `TimeoutError` after waiting 30 minutes.", span, span)
    assert [f.describe() for f in other.missing] == ["30 min"]  # "minutes" is never said


@pytest.mark.parametrize("label", ["System requirements", "Opening hours", "Pricing"])
def test_a_label_opening_the_sentence_is_no_name(label):
    span = f"{label}: the software runs on Windows 10 or later."
    found = align_texts("You can install the software on Linux.", span, span)
    assert not [c.reason for c in found.conflicts if label.split()[0] in c.reason]
