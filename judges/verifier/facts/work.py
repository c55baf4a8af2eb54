"""A budget of alignment work, counted in pairings rather than characters.

The verifier's CPU goes into :func:`align`, and an alignment's cost is a product: the claim's
values times the values of the sentence and of the sources it is set against, its words times
the sentence's words, its names times the sentence's tokens. A claim of 2,900 characters dense
with numbers against an 8,000-character source as dense is within every character limit and
still cost ~10 s of CPU (a few hundred values times a few hundred, many times over). Counting
the pairings bounds the CPU whatever the characters hold.

``align`` charges its pairings before it does the work: an alignment that does not fit raises
:class:`OverWork` and costs nothing; the verifier answers the claim it was for as unchecked
(:data:`NOT_CHECKED`), never a verdict made on part of the work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .analysis import Analysis

#: The reason of a claim whose alignment did not fit the request's work budget.
NOT_CHECKED = "not checked: over the request's verifier budget (VERIFIER_MAX_WORK)"


class OverWork(Exception):
    """The alignment asked for more pairings than the budget has left."""


class Work:
    """Pairings left to spend; ``limit=None`` is unbounded (offline fitting, benchmarks)."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.spent = 0
        self.refused = 0  # charges that did not fit: what the caller answers as not checked

    def charge(self, units: int) -> None:
        """Spend ``units``, or raise :class:`OverWork` and spend nothing when they do not fit: a later,
        smaller claim of the same request may still fit."""
        if self.limit is not None and self.spent + units > self.limit:
            self.refused += 1
            raise OverWork(units)
        self.spent += units

    def afford(self, units: int) -> None:
        """Raise :class:`OverWork` now when ``units`` would not fit, spending nothing: a claim whose
        alignments cannot all fit is refused before the first of them runs, not after a few."""
        if self.limit is not None and self.spent + units > self.limit:
            self.refused += 1
            raise OverWork(units)

    def charge_text(self, text: str) -> None:
        """Charge the analysis of a text made for one claim (its evidence sentences read together)."""
        self.charge(ANALYSED_CHAR * len(text))

    def charge_alignment(self, claim: Analysis, span: Analysis, doc: Analysis) -> None:
        """Charge one ``align(claim, span, doc)``; the sources' side (``doc``) once per claim."""
        once = doc is not span and _charged(claim) not in doc.memo
        self.charge(pairings(claim, span, doc, once))
        if once:
            doc.memo[_charged(claim)] = True

    def afford_alignments(self, claim: Analysis, spans: list[Analysis], doc: Analysis) -> None:
        """``afford`` the alignments of ``claim`` with each of ``spans`` against ``doc``."""
        once = _charged(claim) not in doc.memo
        self.afford(sum(pairings(claim, span, doc, once and n == 0) for n, span in enumerate(spans)))


def _charged(claim: Analysis) -> tuple[str, str]:
    """The memo key (on the sources' Analysis) saying the claim's sources side is charged."""
    return ("work charged", claim.text)


#: Weights, in about a microsecond of CPU each (measured on bench/verifier_dense.py's inputs): a claim's
#: value against a sentence's is compared many ways (ranges, arithmetic, another fact's value); against
#: each value of the sources, once for the claim (what it works out is kept: ``Analysis.memo``) and then
#: by a quick look-up per sentence; a pair of words is a set look-up.
VALUE_PAIR = 10
DOC_PAIR = 1
WORD_PAIR = 0.1
#: Reading a text into facts (``analyse``): ~0.08 s for 8,000 characters dense with numbers.
ANALYSED_CHAR = 10


def pairings(claim: Analysis, span: Analysis, doc: Analysis, first: bool = True) -> int:
    """What one ``align(claim, span, doc)`` costs, in weighted pairings (see the module's docstring);
    ``first``: the first alignment of the claim against these sources."""
    n_values = len(claim.facts)
    values = VALUE_PAIR * n_values * len(span.facts) + DOC_PAIR * n_values * len(doc.facts)
    if first and doc is not span:
        values += VALUE_PAIR * n_values * len(doc.facts)
    words = WORD_PAIR * len(claim.content) * len(span.tokens)
    names = sum(1 for f in claim.facts if f.kind == "entity")
    # an entity's substitute is looked for among the span's tokens, and placed by a word diff of the pair
    by_name = (names * len(span.tokens) + len(claim.tokens) * len(span.tokens)) if names else 0
    return int(values + words + by_name)
