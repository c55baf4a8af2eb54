"""Values a claim works out from the sources' values and its own (judges/verifier/facts/reckoning.py;
pure Python, no model)."""

import pytest

from tests.verifier_support import align_texts

DOSES = "The vaccine requires two doses given 21 days apart."
PLAN = "Plan Pro costs $20 per user per month, billed monthly. Your team has 15 active users on Plan Pro."


@pytest.mark.parametrize(
    "claim,held",
    [
        ("The first dose is on 1 March and the second dose on 22 March.", True),
        ("The first dose is on 1 March and the second dose on 29 March.", False),
    ],
)
def test_two_dates_of_the_claim_as_far_apart_as_the_sources_say(claim, held):
    found = align_texts(claim, DOSES)
    assert (not [f for f in found.missing if f.kind == "date"]) == held
    assert not [c for c in found.conflicts if c.kind == "date"]  # a guess: it never conflicts


def test_the_gap_in_weeks():
    found = align_texts(
        "Dose one on 1 March, dose two on 22 March.", "The second dose follows three weeks after the first."
    )
    assert not [f for f in found.missing if f.kind == "date"]


@pytest.mark.parametrize(
    "claim,held",
    [
        ("The team's Plan Pro subscription costs $300 per month.", True),
        ("The team's Plan Pro subscription costs $300.", True),
        ("The team's Plan Pro subscription costs $400 per month.", False),
    ],
)
def test_an_amount_that_is_a_rate_times_a_count_the_sources_give(claim, held):
    span = PLAN.split(". ")[0] + "."
    found = align_texts(claim, span, PLAN)
    assert (not [f for f in found.missing if f.kind == "quantity"]) == held
    assert not [c for c in found.conflicts if c.kind == "number"]


def test_an_amount_from_a_rate_and_the_claims_own_count():
    found = align_texts("For eight people you need 400 g of rice.", "Rice: 50 g per person.")
    assert not found.missing
    assert {c.describe() for c, _ in found.matched} == {"8 person", "400 g"}
    assert [
        f.describe() for f in align_texts("For eight people you need 300 g of rice.", "Rice: 50 g per person.").missing
    ] == [
        "8 person",
        "300 g",
    ]


@pytest.mark.parametrize(
    "claim,held",
    [
        ("Café Nordlys was founded more than two decades before 2024.", True),
        ("Café Nordlys was founded about 26 years before 2024.", True),
        ("Café Nordlys was founded more than three decades before 2024.", False),
    ],
)
def test_a_duration_from_a_year_of_the_claim_to_a_year_the_sources_state(claim, held):
    found = align_texts(claim, "Café Nordlys was founded in Bergen in 1998 by the Haugen family.")
    assert (not [f for f in found.missing if f.kind == "quantity"]) == held
