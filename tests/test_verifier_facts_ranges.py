"""Values a source gives as a range (judges/verifier/facts/ranges.py; pure Python, no model)."""

import pytest

from judges.verifier.facts import analyse
from tests.verifier_support import REGRESSED_2026_11_27, align_texts

HOURS = "The store is open Monday to Saturday, 9 am to 6 pm."


def _times(found):
    return [(c.describe(), s.text) for c, s in found.matched if c.kind == "time"]


@pytest.mark.parametrize(
    "claim", ["The store is open at 10 a.m.", "The store is open at 9 am.", "It is open at 5:30 pm."]
)
def test_a_time_inside_opening_hours_is_held_by_them(claim):
    found = align_texts(claim, HOURS)
    assert _times(found) and not [c for c in found.conflicts if c.kind == "time"]


def test_a_time_outside_opening_hours_conflicts_with_the_range():
    found = align_texts("The store is open at 8 p.m.", HOURS)
    assert [c.reason for c in found.conflicts if c.kind == "time"] == [
        "time mismatch: claim says 20:00, source says 09:00–18:00"
    ]


def test_a_range_past_midnight():
    span = "The bar serves food from 10 pm until 2 am."
    assert _times(align_texts("Food is served at 1 a.m.", span))
    assert [c.kind for c in align_texts("Food is served at 4 a.m.", span).conflicts] == ["time"]


@pytest.mark.parametrize(
    "span", ["Our phone line is staffed 24 hours a day, 7 days a week.", "Support is available 24/7 by phone."]
)
def test_around_the_clock_holds_any_hour_and_any_day(span):
    found = align_texts("You can reach an agent by phone at 3 a.m. on a Sunday.", span)
    assert {c.kind for c, _ in found.matched} >= {"time", "weekday"}
    assert not found.missing and not found.conflicts


def test_two_times_that_are_no_range_are_two_values():
    found = align_texts("The ferry leaves at 10:00.", "The ferry leaves at 9:00 and at 17:00 on weekdays.")
    assert "time mismatch: claim says 10:00, source says 09:00" in [c.reason for c in found.conflicts]


@pytest.mark.parametrize(
    "claim,inside",
    [("Version 2.3.2 is affected.", True), ("Version 2.3.4 is affected.", True), ("Version 2.3.7 is affected.", False)],
)
def test_a_version_inside_a_release_range(claim, inside):
    found = align_texts(claim, "The bug affects versions 2.3.0 through 2.3.4 and is fixed in 2.3.5.")
    assert (not found.missing) == inside


def test_a_range_of_another_product_holds_no_version():
    found = align_texts("Python 3.11 is supported.", "Node 3.10 through 3.12 are supported.")
    assert [f.text for f in found.missing] == ["Python 3.11"]


@pytest.mark.parametrize(
    "source,relation",
    [
        ("The discount is available until 15 January.", "conflict"),
        ("The discount is available until 31 January.", "match"),
        ("The discount is available until the end of January.", "match"),
    ],
)
def test_until_the_end_of_a_month_is_until_its_last_day(source, relation):
    found = align_texts("The discount can be claimed until the end of January.", source)
    got = "conflict" if any(c.kind == "date" for c in found.conflicts) else "match"
    assert got == relation and (relation == "conflict" or [c.kind for c, _ in found.matched] == ["date"])


def test_the_end_of_february_in_a_leap_year():
    (fact,) = [f for f in analyse("The offer runs until the end of February 2024.").facts if f.kind == "date"]
    assert fact.date_value == (2024, 2, 29)


@pytest.mark.parametrize(
    "text,days",
    [
        ("The conference takes place on 12 and 13 May in Lisbon.", [(None, 5, 12), (None, 5, 13)]),
        ("Held on 3, 4 and 5 June 2025.", [(2025, 6, 3), (2025, 6, 4), (2025, 6, 5)]),
        ("It runs 5–7 June 2024.", [(2024, 6, 5), (2024, 6, 7)]),
    ],
)
def test_days_of_one_month_written_before_it(text, days):
    assert [f.date_value for f in analyse(text).facts if f.kind == "date"] == days


def test_the_days_of_a_list_are_found_in_a_range():
    found = align_texts("The summit is on 12 and 13 May.", "The Data Summit will be held in Lisbon on 12–13 May 2025.")
    assert not found.missing and not found.conflicts


@pytest.mark.parametrize(
    "claim,verdict",
    [
        pytest.param("The store is closed on Sundays.", "supported", marks=REGRESSED_2026_11_27),
        ("The store is not open at 8 p.m.", "supported"),
        ("The store is closed at 8 p.m.", "supported"),
        ("The store is not open at 10 a.m.", "contradicted"),
        ("The store is open at 8 p.m.", "contradicted"),
        ("The store is open on Sundays.", "contradicted"),
    ],
)
def test_a_value_the_claim_denies_outside_the_sources_range(claim, verdict):
    # the two sentences' polarities differ, and the denied day or hour is outside the range:
    # the difference is explained, so it is no negation mismatch either
    from judges.verifier import check_grounding

    (found,) = check_grounding(claim, ["The store is open Monday to Saturday, 9 am to 6 pm."]).claims
    assert found.verdict == verdict, found.reason


@pytest.mark.parametrize(
    "claim,verdict",
    [
        ("You won't be able to shop at the store on a Sunday.", "supported"),
        pytest.param("Visitors cannot tour the store on Sundays.", "supported", marks=REGRESSED_2026_11_27),
        ("You can visit the store on a Sunday.", "contradicted"),
    ],
)
def test_what_opening_hours_say_one_can_do(claim, verdict):
    # "closed" says one cannot visit or shop then, though the source never writes the verb
    from judges.verifier import check_grounding

    assert not {"shop", "visit", "tour"} & set(align_texts(claim, HOURS + " It is closed on Sundays.").uncovered)
    (found,) = check_grounding(claim, [HOURS + " It is closed on Sundays and public holidays."]).claims
    assert found.verdict == verdict, found.reason


def test_verbs_of_a_visit_are_no_words_of_other_sources():
    found = align_texts("You can shop for shoes at the store.", "The store sells shoes and bags.")
    assert "shop" in found.uncovered


@pytest.mark.parametrize(
    "text,ends",
    [
        ("The trail is 10–15 km long.", ["10 km", "15 km"]),
        ("Recovery takes between 9 and 12 months.", ["9 months", "12 months"]),
        ("The plan costs €10–15 a month.", ["10 EUR a month", "15 EUR a month"]),
        ("It costs 10 to 15 dollars per month.", ["10 USD a month", "15 USD a month"]),
        ("About 10 to 15 million visitors.", ["about 10000000 visitor", "15000000 visitors"]),
        ("Delivery takes 2 or 3 days.", ["2 days", "3 days"]),
        ("A call costs 20–30p a minute.", ["0.2 GBP a minute", "0.3 GBP a minute"]),
    ],
)
def test_the_ends_of_a_range_share_the_unit_written_once(text, ends):
    assert [f.describe() for f in analyse(text).facts if f.kind == "quantity"] == ends


@pytest.mark.parametrize(
    "text",
    ["The team finished with a 12–5 record.", "It is 5 km to 10 minutes.", "The league has 12 teams - 5 promoted."],
)
def test_two_amounts_that_are_no_range_keep_their_own_units(text):
    first, second = (f for f in analyse(text).facts if f.kind == "quantity")
    assert (first.dim, first.noun) != (second.dim, second.noun)


def test_two_amounts_joined_by_and_are_no_range():
    found = align_texts("The trail is 4 km long.", "The trail is 3 km and the climb 5 km long.")
    assert not found.matched


@pytest.mark.parametrize(
    "claim,source,verdict",
    [
        ("The route is 12 km long.", "The route is 10–15 km long.", "supported"),
        ("Recovery takes 10 months.", "Recovery usually takes between 9 and 12 months.", "supported"),
        ("The plan costs €12 a month.", "The plan costs €10–15 a month.", "supported"),
        ("The route is 20 km long.", "The route is 10–15 km long.", "contradicted"),
        ("Recovery takes 4 months.", "Recovery usually takes between 9 and 12 months.", "contradicted"),
    ],
)
def test_an_amount_inside_or_outside_a_range(claim, source, verdict):
    from judges.verifier import check_grounding

    (found,) = check_grounding(claim, [source]).claims
    assert found.verdict == verdict
    if verdict == "contradicted":  # the range is one value, written back once
        assert found.reason in (
            "number mismatch: claim says 20 km, source says 10–15 km",
            "number mismatch: claim says 4 months, source says 9–12 months",
        )


def test_a_change_from_one_value_to_another_is_no_range():
    found = align_texts("Unemployment was 12%.", "Unemployment rose from 10% to 15% in a year.")
    assert not found.matched and [c.kind for c in found.conflicts][:1] == ["number"]


def test_a_rate_conflict_names_both_periods():
    from judges.verifier import check_grounding

    (found,) = check_grounding("The subscription costs $12 per year.", ["The subscription costs $12 per month."]).claims
    assert found.reason == "number mismatch: claim says 12 USD a year, source says 12 USD a month"
