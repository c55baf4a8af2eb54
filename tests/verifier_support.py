"""Shared helpers of the verifier's fact tests."""

from judges.verifier.facts import Alignment, align, analyse


def align_texts(claim: str, span: str, doc: str | None = None) -> Alignment:
    """The claim aligned with one sentence (``span``) of the sources (``doc``, the span alone by
    default), each analysed on its own as the verifier does."""
    return align(analyse(claim), analyse(span), analyse(doc or span))
