"""Values in other shapes: an area as a square of a length, a date the evidence gives for another
year (judges/verifier/facts/quantities.py, align.py, verifier.py; pure Python and the packaged
models)."""

import pytest

from judges.verifier.facts import analyse
from tests.verifier_support import align_texts


@pytest.mark.parametrize(
    "text,amount",
    [
        ("The Sahara covers about 9.2 million square kilometres.", "about 9200000 km²"),
        ("The park covers 250 km² of forest.", "250 km²"),
        ("It spans 12 sq mi.", "12 mi²"),
        ("A farm of 3 hectares.", "3 ha"),
        ("Each dose contains 250 micrograms of folic acid.", "250 µg"),
        ("Each dose contains 250 µg.", "250 µg"),
        ("Work remotely for more than two consecutive weeks.", "more than 2 weeks"),
        ("Refunds arrive within 10 working days.", "10 days"),
        ("It lasted less than a quarter of a minute.", "less than 15 s"),
        ("The walk takes half an hour.", "30 min"),
        ("Add half a litre of milk.", "0.5 l"),
        ("The museum had half a million visitors.", "500000 visitors"),
        ("Dana worked 4 overtime hours that week.", "4 h"),
        ("Half of the votes went to the proposal.", "50%"),  # a share stays a share
    ],
)
def test_a_value_is_read_in_its_unit(text, amount):
    assert amount in [f.describe() for f in analyse(text).facts]


def test_square_miles_are_not_square_kilometres():
    from judges.verifier import check_grounding

    (found,) = check_grounding(
        "The Sahara covers an area of roughly 9.2 million square miles.",
        ["The Sahara is the largest hot desert in the world, covering about 9.2 million square kilometres."],
    ).claims
    assert found.verdict == "contradicted"
    assert found.reason.startswith("unit mismatch")


@pytest.mark.parametrize(
    "claim,source,said",
    [
        (
            "German reunification became official on 3 October 1991, nearly two years after the Wall came down.",
            "The Berlin Wall fell on 9 November 1989, and Germany was formally reunified on 3 October 1990.",
            "date mismatch: claim says 1991-10-03, source says 1990-10-03",
        ),
        (
            "Functions will keep accepting Python 3.8 deployments until 14 October 2025.",
            "Python 3.8 runtime support for Functions ends on 14 October 2024.",
            "date mismatch: claim says 2025-10-14, source says 2024-10-14",
        ),
    ],
)
def test_a_date_the_evidence_states_otherwise_is_never_supported(claim, source, said):
    # the wording is close and the cross-encoder leans to entailment; the date is another
    from judges.verifier import check_grounding

    (found,) = check_grounding(claim, [source]).claims
    assert found.probabilities["supported"] == 0.0
    assert (found.verdict, found.reason) == ("contradicted", said)


def test_micrograms_are_not_milligrams():
    found = align_texts(
        "Each 5 ml dose contains 250 micrograms of amoxicillin.", "Each 5 ml contains 250 mg amoxicillin."
    )
    assert [c.kind for c in found.conflicts] == ["unit"]


@pytest.mark.parametrize(
    "claim,relation",
    [
        ("An order placed at 11:00 is dispatched the same day.", "match"),
        ("An order placed at 15:00 is dispatched the same day.", "conflict"),
    ],
)
def test_a_time_against_a_bound_of_the_source(claim, relation):
    found = align_texts(claim, "Orders placed before 2 p.m. are dispatched the same day.")
    times = [c for c in found.conflicts if c.kind == "time"]
    assert (relation == "conflict") == bool(times)
    assert (relation == "match") == any(c.kind == "time" for c, _ in found.matched)


@pytest.mark.parametrize("claim,held", [("at about 09:00", True), ("at about 09:20", False)])
def test_about_a_time_is_within_ten_minutes(claim, held):
    found = align_texts(f"The bus reaches the airport {claim}.", "The bus arrives at the airport at 08:55.")
    assert bool([c for c in found.conflicts if c.kind == "time"]) != held


PLAN = "Plan: Business — $99/month, 25 seats, 1 TB storage."
TARIFF = "Tariff: Flex — 28.4p/kWh, standing charge 53p/day."


@pytest.mark.parametrize(
    "claim,source,conflict",
    [
        ("The Business plan includes up to 50 seats.", PLAN, True),
        ("The Business plan includes up to 25 seats.", PLAN, False),
        ("The Business plan includes fewer than 50 seats.", PLAN, False),  # a bound, not an allowance
        ("The Flex tariff's unit rate is 24.8p per kWh.", TARIFF, True),
        ("The Flex tariff's unit rate is 28.4p per kWh.", TARIFF, False),
    ],
)
def test_an_allowance_and_a_price_per_unit(claim, source, conflict):
    # "up to 50 seats" is an allowance, which "25 seats" contradicts; pence per kWh are a price
    found = align_texts(claim, source)
    assert bool([c for c in found.conflicts if c.kind == "number"]) == conflict


@pytest.mark.parametrize(
    "claim,source,rival",
    [
        (
            "Paid accounts can run up to 100 virtual machines per region.",
            "Free-tier accounts are limited to 3 virtual machines per region.",
            False,
        ),
        (
            "Postgraduate students may register for up to four modules per semester.",
            "Undergraduates may register for a maximum of 6 modules per semester.",
            False,
        ),
        (
            "On Sundays, Line 12 buses run every 30 minutes.",
            "Line 12 runs every 10 minutes Monday to Friday, and every 15 minutes on Saturdays.",
            False,
        ),
        (
            "On Saturdays, Line 12 buses run every 30 minutes.",
            "Line 12 runs every 10 minutes Monday to Friday, and every 15 minutes on Saturdays.",
            True,
        ),
        (
            "Free-tier accounts can run up to 5 virtual machines per region.",
            "Free-tier accounts are limited to 3 virtual machines per region.",
            True,
        ),
    ],
)
def test_a_value_given_for_another_group_is_no_rival(claim, source, rival):
    from judges.verifier.facts.align import ANOTHER_GROUP

    weights = [c.confidence for c in align_texts(claim, source).conflicts if c.kind == "number"]
    assert weights
    assert (max(weights) > ANOTHER_GROUP) == rival


@pytest.mark.parametrize(
    "text,amount",
    [
        ("The deal runs at 12.99 pounds a month.", "12.99 GBP"),
        ("It costs 50 pounds a month.", "50 GBP"),
        ("The unit rate is 24.8p per kWh.", "0.248 GBP"),
        ("Tariff: Flex — 28.4p/kWh, standing charge 53p/day.", "0.284 GBP"),
        ("The bag weighs 12 pounds.", "12 lb"),
        ("The baby weighed 7.5 pounds.", "7.5 lb"),
    ],
)
def test_pounds_and_pence_as_money(text, amount):
    assert any(f.describe().startswith(amount) for f in analyse(text).facts), [
        f.describe() for f in analyse(text).facts
    ]


def test_a_resolution_is_no_pence():
    assert not [f for f in analyse("It streams in 1080p.").facts if f.dim.startswith("currency")]


@pytest.mark.parametrize(
    "claim,source,kind",
    [
        (
            "A household uses around 2,700 kWh of electricity a month.",
            "A household is assumed to use 2,700 kWh of electricity per year.",
            "number",
        ),
        ("The plan comes with 100 MB of data each month.", "Max Data: 100 GB of 5G data per month.", "unit"),
    ],
)
def test_an_amount_of_something_per_period_is_a_rate(claim, source, kind):
    assert [c.kind for c in align_texts(claim, source).conflicts] == [kind]


def test_a_monthly_price_on_a_contract_and_a_name_with_a_hyphen():
    source = "SIM Only 30: Unlimited UK calls and texts, £12.99 a month on a 24-month contract."
    found = align_texts("The SIM-only deal runs on a two-year contract at 12.99 pounds a month.", source)
    assert not found.missing and not found.conflicts


@pytest.mark.parametrize("claim,held", [("less than three months", True), ("more than three months", False)])
def test_the_length_of_a_date_range_whose_first_day_has_no_year(claim, held):
    found = align_texts(f"The exhibition is on for {claim}.", "The exhibition runs from 12 April to 30 June 2025.")
    assert (not found.missing) == held


@pytest.mark.parametrize(
    "claim,held",
    [
        ("The 2022 World Cup final was level at 3–3 after extra time.", True),
        ("The 2022 World Cup final was level at 2–2 after extra time.", False),
    ],
)
def test_a_level_score_is_one_value(claim, held):
    source = "Argentina won the 2022 FIFA World Cup, beating France 4–2 on penalties after the final finished 3–3."
    found = align_texts(claim, source)
    assert (not found.conflicts) == held


def test_a_win_loss_record_stays_two_counts():
    found = align_texts("The team finished with a 12–5 record.", "The team finished with 11 wins and 6 losses.")
    assert [c.kind for c in found.conflicts][:1] == ["number"]


@pytest.mark.parametrize(
    "claim,source,relation",
    [
        ("Early-bird tickets are sold before April.", "Early-bird tickets cost €290 until 31 March.", "match"),
        ("Online returns are due by 31 October.", "Online returns are due by 31 January.", "conflict"),  # deadlines
    ],
)
def test_a_bound_date_against_a_bound_date(claim, source, relation):
    found = align_texts(claim, source)
    dates = [c for c in found.conflicts if c.kind == "date"]
    assert bool(dates) == (relation == "conflict")


def test_a_difference_of_two_sums_the_claim_speaks_of():
    source = "Early-bird tickets cost €290 until 31 March; the regular price from 1 April is €390."
    assert not align_texts("An early-bird ticket saves €100 compared with the regular price.", source).missing
    assert align_texts("An early-bird ticket includes €100 of merchandise.", source).missing


def test_a_possessive_acronym_is_the_name_it_abbreviates():
    found = align_texts(
        "Most of JWST's observing is done in the infrared.", "The James Webb Space Telescope observes in the infrared."
    )
    assert not [f for f in found.missing if f.kind == "entity"]


def test_a_combiner_sure_of_supported_leaves_nothing_to_share(monkeypatch):
    # P(supported) = 1.0 leaves 0 to the other two: the claim is undecided (no division by zero)
    from judges.verifier import check_grounding, verifier

    real = verifier.get_combiner()

    class Sure:
        def probabilities(self, features):
            return {key: float(key == "supported") for key in real.probabilities(features)}

    monkeypatch.setattr(verifier, "get_combiner", lambda: Sure())
    (found,) = check_grounding(
        "Functions will keep accepting Python 3.8 deployments until 14 October 2025.",
        ["Python 3.8 runtime support for Functions ends on 14 October 2024."],
    ).claims
    assert (found.verdict, found.probabilities["supported"]) == ("unverifiable", 0.0)
