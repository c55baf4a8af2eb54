"""Quantifiers a source says less than (docs/verifier.md, "How a verdict is made", step 2): what
limits a universal claim ("only managers" against "all employees", "every day except Sunday",
"orders over $50" against "every order"), a stated share ("12%" against "most users"), and the
other end of the how-often scale ("rare" against "common")."""

from __future__ import annotations

from .analysis import Analysis
from .lexicon import _FREQUENT, _INFREQUENT, _OVER_HALF, _UNDER_HALF, _UNIVERSAL

#: Words that take something out of the span's own universal ("every day except Sunday").
_EXCEPTIONS = frozenset("except unless excluding".split())


def quantifier_mismatches(claim: Analysis, span: Analysis) -> list[tuple[str, str, bool]]:
    """(the claim's quantifier, the span's word or share, whether it is a word -- quoted in the
    reason) of each way the span says less than the claim's quantifier: a restriction of a
    universal claim, a share, the other end of the how-often scale."""
    out = []
    restriction = _restriction(claim, span)
    # a claim that makes the exception itself ("every day except Sunday") is no universal claim
    if claim.universal and restriction is not None and not set(claim.partial) & _EXCEPTIONS:
        out.append((claim.universal[0], restriction, True))
    share = _share_against_quantifier(claim, span)
    if share is not None:
        out.append((share[0], share[1], False))
    scale = _opposite_frequency(claim, span)
    if scale is not None:
        out.append((scale[0], scale[1], True))
    if span.universal and not claim.universal and _restricts(claim):
        out.append(("only", span.universal[0], True))  # "only the keynotes" against "all sessions"
    return out


def _restricts(claim: Analysis) -> bool:
    """Whether the claim says "only" of what it speaks of ("Only the central branch provides …"),
    not of an amount ("only $5", "in only two regions") nor as "the only" or "not only"."""
    toks = claim.tokens
    for i, t in enumerate(toks[:-1]):
        if t.low != "only" or (i > 0 and toks[i - 1].low in ("the", "not", "an", "a")):
            continue
        nxt = toks[i + 1]
        if nxt.kind == "word" and nxt.low not in ("one", "two", "three", "a", "an", "half") and nxt.low != "if":
            return True
    return False


def _restriction(claim: Analysis, span: Analysis) -> str | None:
    """What in the span limits what a universal claim says of everything: a partial quantifier
    ("only managers", "some", "except"), or a threshold the claim does not state ("orders over $50
    ship free" against "every order ships free")."""
    exception = next((w for w in span.partial if w in _EXCEPTIONS), None)
    if exception is not None:  # "every day except Sunday"
        return exception
    if span.universal:
        return None
    if span.partial:
        return span.partial[0]
    stated = {f.dim for f in claim.facts if f.kind == "quantity"}
    return next(
        (f.text for f in span.facts if f.kind == "quantity" and f.bound in ("gt", "ge") and f.dim not in stated),
        None,
    )


def _share_against_quantifier(claim: Analysis, span: Analysis) -> tuple[str, str] | None:
    """(the claim's quantifier, the span's share) when a stated share contradicts it: "most users"
    against "12% of users", "a minority" against 70 %, "all" against 85 %."""
    words = [t.low for t in claim.tokens if t.kind == "word"]
    over = next((w for w in words if w in _OVER_HALF), None)
    under = next((w for w in words if w in _UNDER_HALF), None)
    every = claim.universal[0] if claim.universal else None
    if over is None and under is None and every is None:
        return None
    for f in span.facts:
        if f.kind != "quantity" or f.dim != "percent" or f.implied or f.bound not in ("eq", "approx"):
            continue
        v = float(f.num_value)
        if over is not None and v < 50:
            return over, f.describe()
        if under is not None and v > 50:
            return under, f.describe()
        if every is not None and 0 < v < 100:
            return every, f.describe()
    return None


def _frequency(an: Analysis) -> tuple[int, str] | None:
    """(+1 frequent / many, -1 rare / few, 0 every) and the word, of the first such word."""
    for t in an.tokens:
        if t.kind != "word":
            continue
        if t.low in _FREQUENT:
            return 1, t.low
        if t.low in _INFREQUENT:
            return -1, t.low
        if t.low in _UNIVERSAL:
            return 0, t.low
    return None


def _opposite_frequency(claim: Analysis, span: Analysis) -> tuple[str, str] | None:
    """(claim's word, span's word) when they sit at opposite ends of the how-often scale: frequent
    against rare, or rare against every (every against rare is the universal/partial check's)."""
    c, s = _frequency(claim), _frequency(span)
    if c is None or s is None or c[0] == s[0] or c[0] == 0:
        return None
    if {c[0], s[0]} == {1, -1} or (c[0] == -1 and s[0] == 0):
        return c[1], s[1]
    return None
