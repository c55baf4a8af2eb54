"""A claim that says two things of one subject is checked in parts (judges/verifier/conjuncts.py)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judges.verifier import check_grounding
from judges.verifier.conjuncts import claim_parts


@pytest.mark.parametrize(
    "claim,parts",
    [
        (
            "The train runs every 10 minutes and is fully electric.",
            ["The train runs every 10 minutes.", "The train is fully electric."],
        ),
        (
            "The author was born in Dublin and studied medicine.",
            ["The author was born in Dublin.", "The author studied medicine."],
        ),
        (
            "Iceland's Ring Road circles the island and is paved along its entire length.",
            ["Iceland's Ring Road circles the island.", "Iceland's Ring Road is paved along its entire length."],
        ),
        # one verb, two objects or two names: one statement
        ("The company sells shoes and bags in Paris.", ["The company sells shoes and bags in Paris."]),
        (
            "The company opened offices in Berlin and Tokyo in 2020.",
            ["The company opened offices in Berlin and Tokyo in 2020."],
        ),
        ("The distance between Paris and Lyon is 465 km.", ["The distance between Paris and Lyon is 465 km."]),
        # a subordinate clause first: its subject is not what follows "and"
        (
            "While sales fell, profits rose and were reinvested.",
            ["While sales fell, profits rose and were reinvested."],
        ),
        # ", and" most often opens a clause with a subject of its own
        (
            "Results come in pages, and you fetch each page by cursor.",
            ["Results come in pages, and you fetch each page by cursor."],
        ),
        # an "and" inside parentheses belongs to them
        (
            "The park (founded in 1872 and managed by the NPS) covers 8,983 km².",
            ["The park (founded in 1872 and managed by the NPS) covers 8,983 km²."],
        ),
    ],
)
def test_claim_parts(claim, parts):
    assert claim_parts(claim) == parts


def test_a_detail_the_sources_do_not_state_makes_the_claim_unverifiable_though_most_words_match():
    # checked whole, the sentence about the frequency covered most of the claim and it passed as supported
    check = check_grounding(
        "The train runs every 10 minutes and is fully electric.", ["Trains run every 10 minutes during peak hours."]
    )
    (claim,) = check.claims
    assert claim.claim == "The train runs every 10 minutes and is fully electric."  # one claim, as written
    assert claim.verdict == "unverifiable", claim.reason
    assert claim.reason == "source does not mention: fully, electric"


def test_a_claim_whose_parts_two_sources_state_is_supported_and_names_both():
    sources = [
        "Trains run every 10 minutes during peak hours.",
        "The line was fully electrified in 2019, so all trains are electric.",
    ]
    (claim,) = check_grounding("The train runs every 10 minutes and is fully electric.", sources).claims
    assert claim.verdict == "supported", claim.reason
    assert {e["source_id"] for e in claim.evidence} == {"source-0", "source-1"}
    assert "10 min" in claim.matched and claim.reason.count("covered by") == 2


def test_a_contradicted_part_contradicts_the_claim():
    (claim,) = check_grounding(
        "The bridge opened in 1937 and was painted blue.",
        ["The bridge opened in 1935 and was painted International Orange."],
    ).claims
    assert claim.verdict == "contradicted", claim.reason
    assert claim.failed == "date mismatch: claim says 1937, source says 1935"


@pytest.mark.parametrize(
    "claim,parts",
    [
        # after a first verb in the present tense, a verb in "-s" with a bare object
        (
            "The Rosenthal Clinic is open on weekdays and accepts walk-in patients.",
            ["The Rosenthal Clinic is open on weekdays.", "The Rosenthal Clinic accepts walk-in patients."],
        ),
        (
            "The bakery opens at 7 a.m. and sells sourdough.",
            ["The bakery opens at 7 a.m.", "The bakery sells sourdough."],
        ),
        # an amount opens an object as a number does
        (
            "The Pro plan costs $15 a month and includes 24/7 support.",
            ["The Pro plan costs $15 a month.", "The Pro plan includes 24/7 support."],
        ),
        # plural nouns, whatever follows them
        (
            "The school has teachers and students from 40 countries.",
            ["The school has teachers and students from 40 countries."],
        ),
        ("The hotel offers rooms and suites with sea views.", ["The hotel offers rooms and suites with sea views."]),
        (
            "The app has offline maps and users can share routes.",
            ["The app has offline maps and users can share routes."],
        ),
        (
            "The students from 40 countries attend the school and live on campus.",
            ["The students from 40 countries attend the school and live on campus."],
        ),
    ],
)
def test_claim_parts_by_the_tense_of_the_first_verb(claim, parts):
    assert claim_parts(claim) == parts


def test_a_claim_has_at_most_three_parts():
    claim = "The museum opened in 1990 and was renovated in 2005 and was extended in 2015 and was closed in 2020."
    parts = claim_parts(claim)
    assert len(parts) == 3
    assert parts[-1] == "The museum was extended in 2015 and was closed in 2020."


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["The", "train", "runs", "every", "and", "is", "was", "opened", "(", ")", '"', "a", "sells", "10", ",", "."]
        ),
        max_size=20,
    )
)
def test_claim_parts_never_fails_and_keeps_the_claims_words(words):
    claim = " ".join(words)
    parts = claim_parts(claim)
    assert parts
    if len(parts) == 1:
        assert parts == [claim]
    else:
        assert 2 <= len(parts) <= 3 and all(p.strip(" .") for p in parts)
        said = set(claim.split())
        assert all(set(p.rstrip(".!").split()) <= said | {w.rstrip(".!") for w in said} for p in parts)


def test_a_part_of_the_claim_meets_the_part_of_the_source_it_speaks_of():
    # checked in parts against the whole source sentence, "is not approved" counted one negation
    # against the sentence's one ("should not be taken") and passed; the source's parts are clauses too
    source = ["The drug is approved for children over 12 and should not be taken by pregnant women."]
    (claim,) = check_grounding(
        "The drug is not approved for children and should not be taken by pregnant women.", source
    ).claims
    assert claim.verdict == "contradicted", claim.reason
    assert claim.kind == "negation"
    assert claim.evidence[0]["span"] == source[0]  # the evidence names the source's sentence as written


@pytest.mark.parametrize(
    "claim",
    [
        "The plan includes support and costs $10 a month and has no limits.",  # a verb the forms miss
        "Cats and dogs are allowed and must be leashed.",
    ],
)
def test_no_parts_when_an_and_comes_before_the_first_verb_found(claim):
    assert claim_parts(claim) == [claim]


@pytest.mark.parametrize(
    "claim",
    [
        "System requirements: the software runs on Windows 10 or later and macOS 12 or later.",
        "The app runs on iOS 17 and iPadOS 17.",
    ],
)
def test_a_name_with_a_capital_inside_is_no_second_verb(claim):
    # "macOS 12" read as a verb in "-s" before a number made "System macOS 12 or later." a part
    assert claim_parts(claim) == [claim]


@pytest.mark.parametrize(
    "claim,parts",
    [
        (
            "The vaccine was 71% effective against infection and 85% effective against hospitalisation.",
            [
                "The vaccine was 71% effective against infection.",
                "The vaccine was 85% effective against hospitalisation.",
            ],
        ),
        (
            "The plan costs $10 per month and $100 per year.",
            ["The plan costs $10 per month.", "The plan costs $100 per year."],
        ),
        (
            "Two doses of MMR are about 97% effective against measles, and the protection lasts for life.",
            ["Two doses of MMR are about 97% effective against measles.", "The protection lasts for life."],
        ),
        # a second amount of something else, and a list after a comma, stay whole
        ("The recipe needs 2 eggs and 200 g of flour.", ["The recipe needs 2 eggs and 200 g of flour."]),
        (
            "He visited Paris, Rome, and the city of Vienna in 1990.",
            ["He visited Paris, Rome, and the city of Vienna in 1990."],
        ),
    ],
)
def test_a_second_amount_without_its_verb_and_a_clause_with_its_own_subject(claim, parts):
    assert claim_parts(claim) == parts


def test_the_added_clause_leaves_the_claim_unverifiable():
    (found,) = check_grounding(
        "Two doses of MMR are about 97% effective against measles, and the protection lasts for life.",
        ["Two doses of MMR vaccine are about 97% effective at preventing measles."],
    ).claims
    assert found.verdict == "unverifiable", found.reason


@pytest.mark.parametrize(
    "claim,parts",
    [
        (
            "Ward 5 allows visitors from 2pm to 8pm, and all visitors must wear a face mask.",
            ["Ward 5 allows visitors from 2pm to 8pm.", "All visitors must wear a face mask."],
        ),
        (
            "Abiy Ahmed won the 2019 Peace Prize, and he was the first Ethiopian to receive a Nobel Prize.",
            ["Abiy Ahmed won the 2019 Peace Prize.", "He was the first Ethiopian to receive a Nobel Prize."],
        ),
        (
            "Argentina won the final and lifted the trophy.",
            ["Argentina won the final.", "Argentina lifted the trophy."],
        ),
        # an interval of the first part, not a clause of its own
        (
            "Line 12 runs every 10 minutes on weekdays, and every 15 minutes on Saturdays.",
            ["Line 12 runs every 10 minutes on weekdays, and every 15 minutes on Saturdays."],
        ),
    ],
)
def test_a_clause_with_a_subject_of_its_own_or_a_verb_in_the_past(claim, parts):
    assert claim_parts(claim) == parts
