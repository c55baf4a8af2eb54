"""Shared helpers of the verifier's fact tests."""

import pytest

from judges.verifier.facts import Alignment, align, analyse


def align_texts(claim: str, span: str, doc: str | None = None) -> Alignment:
    """The claim aligned with one sentence (``span``) of the sources (``doc``, the span alone by
    default), each analysed on its own as the verifier does."""
    return align(analyse(claim), analyse(span), analyse(doc or span))


#: Cases the verifier decided right until the cross-encoder was adapted on 2026-11-27, and decides
#: wrong since (docs/verifier.md, "The cross-encoder, adapted": the adapted model leans to
#: "contradiction" on a short claim with a changed or inferred word, and the combiner weighs the
#: fact checks less). Not strict: these verdicts sit near a threshold, and the int8 arithmetic of
#: the machine's CPU decides some of them right (docs/verifier.md, "Verdicts and the CPU").
REGRESSED_2026_11_27 = pytest.mark.xfail(strict=False, reason="regressed with the adapted cross-encoder (2026-11-27)")

#: Cases decided right on one machine's CPU and not on another's: their probabilities sit within a
#: few hundredths of a threshold, where the int8 arithmetic of the CPU decides (docs/verifier.md,
#: "Verdicts and the CPU"). Kept, not deleted, so that a verifier that decides them firmly shows.
BORDERLINE_ON_SOME_CPUS = pytest.mark.xfail(
    strict=False, reason="within a few hundredths of a threshold: decided by the CPU's int8 arithmetic"
)
