"""Values a claim works out from the sources' values and its own (judges/verifier/facts/reckoning.py;
pure Python, no model)."""

import pytest

from judges.verifier.facts import analyse
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
    assert {c.describe() for c, _ in found.matched} == {"8 people", "400 g"}
    assert [
        f.describe() for f in align_texts("For eight people you need 300 g of rice.", "Rice: 50 g per person.").missing
    ] == [
        "8 people",
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


RISOTTO = "Mushroom risotto (serves 4): 200 g arborio rice, 1 litre vegetable stock, 250 g mushrooms, 1 onion."


@pytest.mark.parametrize(
    "claim,held",
    [
        ("To make the dish for eight people you would need 400 g of rice.", True),
        ("For two people the risotto takes 500 ml of vegetable stock.", True),
        ("To make the dish for eight people you would need 300 g of rice.", False),
        ("For 4 people you need 400 g of rice.", False),  # the same number of people: no scaling
    ],
)
def test_an_amount_scaled_to_another_number_of_people(claim, held):
    found = align_texts(claim, RISOTTO)
    assert (not [f for f in found.missing if f.kind == "quantity"]) == held


def test_serves_without_a_noun_and_a_count_of_an_ingredient():
    found = align_texts("Feeding six guests takes 1.5 kg of lamb.", "Roast lamb, serves 4: 1 kg leg of lamb.")
    assert not found.missing
    found = align_texts("For 12 servings you need 6 eggs.", "Pancakes (makes 4 servings): 2 eggs, 250 ml milk.")
    assert not found.missing
    assert [
        f.describe()
        for f in align_texts("For 12 servings you need 8 eggs.", "Pancakes (makes 4 servings): 2 eggs.").missing
    ] == [
        "12 servings",
        "8 eggs",
    ]


def test_a_recipe_amount_before_its_ingredient_is_a_mass():
    from judges.verifier.facts import analyse

    amounts = {f.describe() for f in analyse(RISOTTO).facts if f.kind == "quantity"}
    assert {"200 g", "250 g", "1 l"} <= amounts


@pytest.mark.parametrize(
    "claim,held",
    [
        ("Helix Systems has been operating for over 20 years.", True),
        ("Helix Systems has been operating for more than 60 years.", False),
    ],
)
def test_a_duration_without_a_year_of_the_claim_counts_to_this_year(claim, held):
    found = align_texts(claim, "Helix Systems was founded in 1998.")
    assert (not [f for f in found.missing if f.kind == "quantity"]) == held
    assert not found.conflicts


def test_or_to_the_last_year_the_sources_state():
    profile = "Company profile (updated March 2024): Helix Systems was founded in 1998 by two graduates."
    assert not align_texts("Helix Systems has been in business for 26 years.", profile).missing


def test_a_company_founded_then_has_been_in_business_since():
    found = align_texts("Helix Systems has been in business for over 20 years.", "Helix Systems was founded in 1998.")
    assert "business" not in found.uncovered
    assert "business" in align_texts("Helix Systems is in business in Ohio.", "Helix Systems sells software.").uncovered


@pytest.mark.parametrize(
    "claim,held", [("at most six virtual machines in total", True), ("at most eight virtual machines in total", False)]
)
def test_a_count_per_something_times_the_number_of_those(claim, held):
    source = (
        "Free-tier accounts are limited to 3 virtual machines per region, "
        "and the free tier is available in only two regions."
    )
    found = align_texts(f"A free-tier account can run {claim}.", source)
    assert (not [f for f in found.missing if f.kind == "quantity"]) == held


def test_serves_opening_a_sentence_of_its_own():
    carbonara = "Spaghetti alla carbonara. Serves 4. Ingredients: 400 g spaghetti, 150 g guanciale."
    span = "Ingredients: 400 g spaghetti, 150 g guanciale."
    found = align_texts("Making this carbonara for eight people would take 800 g of spaghetti.", span, carbonara)
    assert not found.missing and not found.conflicts


def _quantities_settled(claim: str, source: str | tuple[str, str]) -> bool:
    """Whether every value of the claim is found (none missing, none in conflict); a length of
    time the source does not state is left aside. ``source`` is one sentence, or (a sentence,
    all the sources) where the value is worked out from another sentence."""
    span, doc = source if isinstance(source, tuple) else (source, None)
    found = align_texts(claim, span, doc)
    return not [f for f in found.missing if f.dim != "duration"] and not [
        c for c in found.conflicts if c.kind in ("number", "unit", "time", "date")
    ]


TOUR = "The 2025 Tour of the Carpathians covered 3,400 km over 21 stages, including six summit finishes."


@pytest.mark.parametrize(
    "claim,held",
    [
        ("Stages in the 2025 Tour averaged roughly 162 km each.", True),
        ("Stages in the 2025 Tour averaged 162 km each.", True),  # 161.9 as written to the unit
        ("Stages in the 2025 Tour averaged roughly 190 km each.", False),
        ("The 2025 Tour covered 162 km.", False),  # no word shares it out
    ],
)
def test_an_amount_shared_out_over_a_count(claim, held):
    assert _quantities_settled(claim, TOUR) == held


def test_over_after_an_amount_is_across_not_a_bound():
    (stages,) = [f for f in analyse(TOUR).facts if f.dim == "count" and "stage" in f.noun]
    assert (stages.num_value, stages.bound) == (21.0, "eq")
    assert [f.bound for f in analyse("Over 21 stages were raced.").facts] == ["gt"]


CORSA = "The Corsa 9 frame is available in sizes 50, 52, 54, 56 and 58 cm."
SAVER = "The Flex Saver account pays 3% annual interest on the full balance."
MORTGAGE = "Purchase price: £250,000, loan amount: £200,000."
PUPPIES = "Vaccinate puppies at 8, 12 and 16 weeks of age."
DOSE_TIMES = ("First dose given at 06:00.", "Cefuroxime 750 mg IV every 8 hours. First dose given at 06:00.")
RETURNS = "Delivered on 5 March 2024. Return window: 30 days from delivery."
CLIMBERS = "The face was first climbed by Anderl Heckmair, Ludwig Vörg, Heinrich Harrer and Fritz Kasparek."


@pytest.mark.parametrize(
    "claim,source,held",
    [
        # how many values a list gives
        ("The Corsa 9 is offered in five frame sizes.", CORSA, True),
        ("The Corsa 9 is offered in four frame sizes.", CORSA, False),
        ("The Corsa 9 is offered in six frame sizes.", CORSA, False),
        # a share the sources state of another amount of the claim
        ("Leaving €10,000 in the account for one year would earn €300 in interest.", SAVER, True),
        ("Leaving €10,000 in the account for one year would earn €500 in interest.", SAVER, False),
        # 2.8 % of €10,000 is no "€300"
        (
            "Leaving €10,000 in the account for one year would earn €300 in interest.",
            SAVER.replace("3%", "2.8%"),
            False,
        ),
        # a percentage that is the ratio of two amounts (not a change: the implied change's)
        ("This mortgage is at an 80% loan-to-value ratio.", MORTGAGE, True),
        ("This mortgage is at a 70% loan-to-value ratio.", MORTGAGE, False),
        ("The price fell 80% to the loan amount.", MORTGAGE, False),
        # the step of a list
        ("The puppy vaccinations are spaced four weeks apart.", PUPPIES, True),
        ("The puppy vaccinations are spaced six weeks apart.", PUPPIES, False),
        ("The puppy vaccinations take four weeks.", PUPPIES, False),  # no step between values
        # a clock time an interval leads to from a stated time (the interval in another sentence)
        ("The patient's third dose is due at 22:00.", DOSE_TIMES, True),
        ("The patient's third dose is due at 21:00.", DOSE_TIMES, False),
        # a date within a period counted from a stated date
        ("A return started on 20 March 2024 would still be inside the return window.", RETURNS, True),
        ("A return started on 20 April 2024 would still be inside the return window.", RETURNS, False),
        # how many people a list of names gives
        ("A four-man team made the first ascent.", CLIMBERS, True),
        ("A five-man team made the first ascent.", CLIMBERS, False),
    ],
)
def test_a_value_the_claim_works_out_from_the_sources(claim, source, held):
    assert _quantities_settled(claim, source) == held


@pytest.mark.parametrize(
    "claim,held",
    [
        ("The 512 GB model costs €999.", True),
        ("The 512 GB model costs €1,099.", False),
    ],
)
def test_an_amount_and_what_the_sources_add_to_it(claim, held):
    source = "The phone starts at €899 for the 256 GB model; the 512 GB model costs €100 more."
    found = align_texts(claim, source)
    settled = not [f for f in found.missing if f.dim.startswith("currency")] and not [
        c for c in found.conflicts if c.kind == "number" and "EUR" in c.claim
    ]
    assert settled == held


def test_the_values_of_a_list_share_the_unit_after_the_last():
    facts = analyse("Vaccinate puppies at 8, 12 and 16 weeks of age.").facts
    assert [(f.dim, f.unit, f.num_value / 604800) for f in facts] == [
        ("duration", "week", pytest.approx(8)),
        ("duration", "week", pytest.approx(12)),
        ("duration", "week", pytest.approx(16)),
    ]
    assert [f.dim for f in analyse("In 2019, 12 people came.").facts] == ["", "count"]


def test_a_count_a_list_gives_is_shown_as_the_list():
    found = align_texts("A four-man team made the first ascent.", CLIMBERS)
    assert ("four-man", "Anderl Heckmair, Ludwig Vörg, Heinrich Harrer and Fritz Kasparek") in [
        (c.text, s.text) for c, s in found.matched
    ]


def test_a_count_times_a_rate_beside_a_named_entity_is_worked_out_not_a_crash():
    """A claim naming a company beside a count and a rate "per seat": the count's product is
    compared with the claim's other amounts only, never with an entity's name (a TypeError once,
    found by a fifth-round training pair)."""
    bill = "Your card will be charged $2,160 today for 12 seats."
    prices = "Quarry Analytics pricing. Team plan: $20 per seat per month billed monthly, or $15 per seat per month."
    found = align_texts(
        "The $2,160 charge matches Quarry's annual rate of $15 per seat for 12 seats.", prices, f"{bill} {prices}"
    )
    assert not [f for f in found.missing if f.kind == "quantity"]
