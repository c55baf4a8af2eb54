"""Negations in other words: a prefix, a verb of exclusion, one cue of several, a cost denied
(judges/verifier/facts/analysis.py, align.py; pure Python, no model)."""

import pytest

from judges.verifier.facts import analyse
from tests.verifier_support import REGRESSED_2026_11_27, align_texts


def _negation(claim: str, source: str):
    return [c for c in align_texts(claim, source).conflicts if c.kind == "negation"]


@pytest.mark.parametrize(
    "text", ["Beethoven's Symphony No. 9 premiered in Vienna.", "Take Platform No 4 to Bern.", "See rule no. 12."]
)
def test_no_before_a_number_is_number_not_negation(text):
    assert analyse(text).negation_cues == []


@pytest.mark.parametrize("text", ["There is no parking.", "No 5-star hotels were built.", "We have no 5 star rooms."])
def test_no_before_a_noun_still_negates(text):
    assert analyse(text).negation_cues == ["no"]


@pytest.mark.parametrize(
    "claim,source,conflict",
    [
        (
            "Antibiotics are effective against the common cold.",
            "Antibiotics are ineffective against the common cold.",
            True,
        ),
        (
            "Antibiotics are not effective against the common cold.",
            "Antibiotics are ineffective against the common cold.",
            False,
        ),
        ("Paid plans offer limited storage.", "Paid plans come with unlimited storage.", True),
        ("Paid plans offer unlimited storage.", "Paid plans come with unlimited storage.", False),
        # the rest of "international" is no word the other text says: no negation
        ("The firm operates in 40 markets.", "The firm operates in 40 international markets.", False),
        # a word that only looks negated
        ("The fossil was covered by ash in 1990.", "The fossil was discovered under ash in 1990.", False),
    ],
)
def test_a_negating_prefix_denies_the_word_the_other_text_says(claim, source, conflict):
    assert bool(_negation(claim, source)) == conflict


def test_a_prefixed_word_covers_the_word_it_denies():
    assert "effective" not in align_texts("Antibiotics are effective.", "Antibiotics are ineffective.").uncovered


def test_a_policy_that_excludes_does_not_cover():
    found = _negation(
        "Pre-existing conditions are covered by the travel policy.",
        "The travel policy covers emergency treatment but excludes pre-existing conditions.",
    )
    assert [c.source for c in found] == ["excludes"]


def test_excluding_as_a_preposition_negates_nothing():
    assert not _negation(
        "It launched on Netflix on March 6, 2019.",
        "It is due out on Netflix around the world (excluding Australia) on March 6th, 2019.",
    )


@pytest.mark.parametrize(
    "claim,conflict",
    [
        ("Students who audit the course earn credit for it.", True),
        ("Students who audit the course do not earn credit for it.", False),
        ("Auditing students must sit the final examination.", True),
    ],
)
def test_of_two_negations_the_one_about_the_claim_counts(claim, conflict):
    source = "Auditing students do not receive credit and are not required to sit the final examination."
    assert bool(_negation(claim, source)) == conflict


@pytest.mark.parametrize(
    "claim,conflict",
    [
        ("The homeowner's installation qualifies for Smart Export Guarantee payments.", True),
        ("The homeowner's installation does not qualify for Smart Export Guarantee payments.", False),
    ],
)
def test_a_negation_giving_the_reason_for_another_does_not_cancel_it(claim, conflict):
    source = (
        "Unfortunately, your installation is not eligible for Smart Export Guarantee payments, because the "
        "installer was not MCS-certified at the time of installation."
    )
    assert bool(_negation(claim, source)) == conflict


@pytest.mark.parametrize(
    "claim,source",
    [
        ("Tenants are allowed to keep pets.", "Pets are not permitted."),
        ("Helmets are mandatory for riders.", "Helmets are required for all riders."),
        ("The course is voluntary.", "The course is optional."),
        ("The installation qualifies for payments.", "The installation is eligible for payments."),
    ],
)
def test_words_of_permission_and_obligation_cover_each_other(claim, source):
    assert align_texts(claim, source).coverage > align_texts(claim, "Bikes are parked outside.").coverage
    found = align_texts(claim, source)
    assert not {"allowed", "mandatory", "voluntary", "qualifies"} & set(found.uncovered)


def test_two_negations_about_the_claim_cancel_as_before():
    assert not _negation("The museum is open on Mondays.", "The museum is not closed on Mondays, not even in winter.")


FREE = "All ATM withdrawals within the Eurozone are free of charge for Premier account holders."


@pytest.mark.parametrize(
    "claim,verdict",
    [
        ("Premier account holders are charged for their ATM withdrawals within the Eurozone.", "contradicted"),
        pytest.param(
            "Premier account holders are not charged for ATM withdrawals within the Eurozone.",
            "supported",
            marks=REGRESSED_2026_11_27,
        ),
        pytest.param(
            "Premier account holders are charged nothing for ATM withdrawals within the Eurozone.",
            "supported",
            marks=REGRESSED_2026_11_27,
        ),
    ],
)
def test_charged_is_the_opposite_of_free_unless_denied(claim, verdict):
    from judges.verifier import check_grounding

    (found,) = check_grounding(claim, [FREE]).claims
    assert found.verdict == verdict, found.reason


def test_a_claim_on_both_sides_of_a_direction_has_no_side_to_set_against():
    source = "Quarterly operating profit fell 8% year on year to €410 million, blamed on higher energy costs."
    claim = "The company blamed rising energy costs for an 8% drop in quarterly operating profit."
    assert not [c for c in align_texts(claim, source).conflicts if c.kind == "antonym"]
    assert [c.kind for c in align_texts("Operating profit rose 8% to €410 million.", source).conflicts] == ["antonym"]


@pytest.mark.parametrize(
    "claim,source",
    [
        ("The north wing is older than the south wing.", "The south wing is older than the north wing."),
        (
            "The west wing was built before the east wing.",
            "The east wing was built some forty years before the west wing.",
        ),
    ],
)
def test_a_comparison_of_two_places_named_by_their_direction(claim, source):
    assert [c.kind for c in align_texts(claim, source).conflicts if c.kind in ("comparative", "antonym")]


def test_never_stop_is_keep_going():
    assert analyse("A rabbit's teeth never stop growing.").negation_cues == []


@pytest.mark.parametrize(
    "claim,conflict",
    [
        ("Chelsea lost to Arsenal on Saturday.", False),  # the other side of the same match
        ("Arsenal lost to Chelsea on Saturday.", True),
    ],
)
def test_winning_and_losing_are_opposites_for_the_same_side(claim, conflict):
    found = align_texts(claim, "Arsenal won against Chelsea on Saturday.")
    assert bool([c for c in found.conflicts if c.kind == "antonym"]) == conflict


@pytest.mark.parametrize(
    "claim,conflict",
    [
        ("Only the central branch of the library provides free Wi-Fi.", True),
        ("Every branch of the library provides free Wi-Fi.", False),
        ("The library is the only one in town with free Wi-Fi.", False),  # "the only": no restriction
        ("The free tier is available in only two regions.", False),  # "only" of an amount
    ],
)
def test_only_against_all(claim, conflict):
    found = align_texts(claim, "All branches of the library offer free Wi-Fi.")
    assert bool([c for c in found.conflicts if c.kind == "quantifier"]) == conflict


@pytest.mark.parametrize(
    "text,cues",
    [
        ("Requests without a valid key are rejected with HTTP 401 Unauthorized.", ["without", "rejected"]),
        ("Error 403 (Forbidden) is returned when the key lacks the scope.", ["lacks"]),
        ("The server returns 404 Not Found.", []),
        ("The server is not found.", ["not"]),
    ],
)
def test_the_name_of_a_status_code_negates_nothing(text, cues):
    assert analyse(text).negation_cues == cues


@pytest.mark.parametrize(
    "claim,source,conflict",
    [
        (
            "Heavy snow shut the Brenner Pass on Tuesday.",
            "Heavy snowfall forced the closure of the Brenner Pass.",
            False,
        ),
        (
            "The Port of Valmont was shut during the strike.",
            "The Port of Valmont remained open during the strike.",
            True,
        ),
        ("The crew failed to monitor airspeed.", "The cause was the crew's failure to monitor airspeed.", False),
        ("The museum is closed on Mondays.", "The museum is not closed on Mondays.", True),
    ],
)
def test_a_negative_state_and_the_event_that_brings_it_about_agree(claim, source, conflict):
    assert bool(_negation(claim, source)) == conflict


@pytest.mark.parametrize(
    "claim,source,conflict",
    [
        ("The coup was mostly non-violent.", "The coup was largely bloodless.", False),
        ("The coup was mostly non-violent.", "The coup was violent.", True),
        ("The ticket is non-refundable.", "Tickets can be refunded within 24 hours.", True),
    ],
)
def test_non_denies_only_what_the_other_text_speaks_of(claim, source, conflict):
    assert bool(_negation(claim, source)) == conflict


@pytest.mark.parametrize(
    "claim,conflict",
    [
        ("The phone no longer has a headphone jack.", False),
        ("The phone still has a headphone jack.", True),
    ],
)
def test_dropping_something_is_no_longer_having_it(claim, conflict):
    assert bool(_negation(claim, "The phone drops the headphone jack.")) == conflict
    assert analyse("Prices dropped by 5% in May.").negation_cues == []
