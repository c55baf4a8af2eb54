"""Every claim of the data files against sources it was not written for: the verifier answers,
never raises. A claim with a count, a rate "per seat" and a company's name once raised a TypeError
(a 500 through the check endpoint, docs/verifier.md "Contrast triples"); here the facts layer
meets pairings of values that no pair's author meant. Fixed seed, so a failure names a pairing
that can be replayed. No database."""

import json
import random

from judges.verifier import check_grounding
from judges.verifier.training.evaluate import DEVSET, LABELS, load

CHECKS = 60


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


def test_any_claim_against_any_sources_gets_verdicts_not_an_exception():
    checked = 0
    for claim, sources in _pairings():
        try:
            result = check_grounding(claim, sources)
        except Exception as exc:  # any exception: the message names the pairing to replay
            raise AssertionError(f"{type(exc).__name__}: {exc} on {json.dumps([claim, sources])[:2000]}") from exc
        assert result.claims and all(c.verdict in LABELS for c in result.claims)
        assert result.total_claims == len(result.claims)
        checked += 1
    assert checked == CHECKS
