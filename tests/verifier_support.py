"""Shared helpers of the verifier's fact tests."""

import pytest

from judges.verifier.facts import Alignment, align, analyse


def align_texts(claim: str, span: str, doc: str | None = None) -> Alignment:
    """The claim aligned with one sentence (``span``) of the sources (``doc``, the span alone by
    default), each analysed on its own as the verifier does."""
    return align(analyse(claim), analyse(span), analyse(doc or span))


#: Cases the verifier decided right until the cross-encoder was adapted on 2026-11-27, and decides
#: wrong since (verifier_lab/NOTES.md, "The cross-encoder, adapted": the adapted model leans to
#: "contradiction" on a short claim with a changed or inferred word, and the combiner weighs the
#: fact checks less). Strict: a case decided right again fails here, so the mark goes. The models'
#: int8 products are exact on every x86 CPU (verifier_lab/NOTES.md, "Verdicts and the CPU"); float
#: rounding still moves 4 of 3,118 evaluation pairs on an AVX2 EPYC, none of the cases marked here.
REGRESSED_2026_11_27 = pytest.mark.xfail(strict=True, reason="regressed with the adapted cross-encoder (2026-11-27)")
