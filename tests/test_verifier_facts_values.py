"""Values in other shapes: an area as a square of a length, a date the evidence gives for another
year (judges/verifier/facts/quantities.py, align.py, verifier.py; pure Python and the packaged
models)."""

import pytest

from judges.verifier.facts import analyse


@pytest.mark.parametrize(
    "text,amount",
    [
        ("The Sahara covers about 9.2 million square kilometres.", "about 9200000 km²"),
        ("The park covers 250 km² of forest.", "250 km²"),
        ("It spans 12 sq mi.", "12 mi²"),
        ("A farm of 3 hectares.", "3 ha"),
    ],
)
def test_an_area_is_a_square_of_a_length(text, amount):
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
