"""Values a source gives as a range, read as the range (docs/verifier.md, "How a verdict is made",
step 2): opening hours ("9 am to 6 pm" holds 10 a.m. and not 8 p.m.), service around the clock
("24 hours a day", "24/7" hold 3 a.m.; "7 days a week" holds Sunday) and releases ("versions
2.3.0 through 2.3.4" hold 2.3.2). Without this, each end of a range is read as a value of its own:
"open at 10 a.m." was a time mismatch with "9 am", and "version 2.3.2" was missing."""

from __future__ import annotations

import re
from dataclasses import replace

from .analysis import Analysis
from .compare import RELEASE_WORDS, _fact_relation
from .dates import _RANGE_WORDS
from .fact import Fact
from .lexicon import _DIRECTION_WORDS

#: Words and signs between the two ends of a range (a date range's, and "between 9 and 5").
_BETWEEN = _RANGE_WORDS | {"—", "and"}
#: How a text says it runs at every hour of the day, and on every day of the week.
_ALL_DAY = re.compile(r"\b(?:24 hours a day|24 hours per day|24/7|24x7|around the clock|round[- ]the[- ]clock)\b")
_EVERY_DAY = re.compile(r"\b(?:24/7|24x7|7 days a week|seven days a week|every day of the week|every day|daily)\b")


def _joined(an: Analysis, first: Fact, second: Fact) -> bool:
    """Whether only a range word separates two facts ("9 am to 6 pm", "2.3.0 through 2.3.4")."""
    if not first.tokens or not second.tokens:
        return False
    between = an.tokens[max(first.tokens) + 1 : min(second.tokens)]
    return 1 <= len(between) <= 2 and all(t.low in _BETWEEN for t in between)


def _pairs(an: Analysis, kind: str, dim: str | None = None) -> list[tuple[Fact, Fact]]:
    """The ranges of ``an`` among its facts of one kind, worked out once per text."""
    key = ("ranges", kind, dim)
    if key not in an.memo:
        facts = sorted(
            (f for f in an.facts if f.kind == kind and (dim is None or f.dim == dim) and f.tokens),
            key=lambda f: min(f.tokens),
        )
        an.memo[key] = [(a, b) for a, b in zip(facts, facts[1:]) if _joined(an, a, b)]
    return an.memo[key]  # type: ignore[return-value]


def time_in_range(cf: Fact, an: Analysis) -> tuple[Fact | None, Fact | None]:
    """(a fact of ``an`` whose range holds the claim's clock time, the first fact of a range that
    does not hold it); either may be None. Around the clock holds every time."""
    if cf.kind != "time" or cf.bound != "eq":
        return None, None
    t = int(cf.num_value)
    outside = None
    for a, b in _pairs(an, "time"):
        start, end = int(a.num_value), int(b.num_value)
        inside = start <= t <= end if start <= end else (t >= start or t <= end)  # "10 pm to 2 am"
        if inside:
            return a, None
        outside = outside or a
    if outside is None and (m := _ALL_DAY.search(an.text_low)):
        return Fact("time", t, m.group(0), 0, 0, implied=True), None
    return None, outside


#: How far past an end of a range a value may lie and still be inside it: the rounding of a
#: converted unit ("6 miles" is 9.66 km, inside "5–9.7 km").
_RANGE_ROUNDING = 0.02


def _an_amount_range(an: Analysis, a: Fact, b: Fact) -> bool:
    """Whether two joined amounts are a range ("10–15 km", "between 9 and 12 months"), not a pair
    ("3 km and 5 km", "a 12–5 record") or a change ("rose from 10% to 15%": the value was each, never between)."""
    if a.num_value >= b.num_value:
        return False  # a range runs up ("10–15"); "a 12–5 record" is two counts
    first = min(a.tokens)
    joiner = an.tokens[max(a.tokens) + 1].low
    before = [t.low for t in an.tokens[max(0, first - 3) : first]]
    if joiner == "and":
        return before[-1:] == ["between"]
    if before[-1:] == ["from"]:
        return not any(w in _DIRECTION_WORDS for w in before[:-1])
    return True


def amount_in_range(cf: Fact, an: Analysis) -> tuple[Fact | None, Fact | None]:
    """(what of ``an`` holds the claim's amount inside one of its ranges, the first end of a range
    of the claim's kind of amount that does not hold it); either may be None. "12 km" is inside
    "10–15 km", "20 km" is not (quantities.share_range_units gives both ends the unit)."""
    if cf.kind != "quantity" or cf.bound not in ("eq", "approx"):
        return None, None
    outside = None
    for a, b in _pairs(an, "quantity", cf.dim):
        if not _an_amount_range(an, a, b) or "none" in (_fact_relation(cf, a), _fact_relation(cf, b)):
            continue
        lo, hi = sorted((a.num_value, b.num_value))
        slack = _RANGE_ROUNDING * max(abs(lo), abs(hi))
        if lo - slack <= cf.num_value <= hi + slack:
            text = an.text[a.start : b.end]
            return replace(a, value=cf.num_value, raw=cf.raw, bound=cf.bound, text=text, implied=True), None
        outside = outside or a
    return None, outside


def date_in_range(cf: Fact, an: Analysis) -> tuple[Fact | None, Fact | None]:
    """(what of ``an`` holds the claim's day inside a range of days, the first end of a range of
    days that does not hold it): "25 November" is inside "24–27 November", "30 November" is not.
    Years are compared where both give one."""
    y, m, d = cf.date_value if cf.kind == "date" else (None, None, None)
    if cf.kind != "date" or cf.bound != "eq" or cf.dim or m is None or d is None:
        return None, None
    outside = None
    for a, b in _pairs(an, "date"):
        (ay, am, ad), (by, bm, bd) = a.date_value, b.date_value
        if am is None or ad is None or bm is None or bd is None or a.dim or b.dim:
            continue
        if y is not None and ay is not None and by is not None and not ay <= y <= by:
            continue
        if (am, ad) <= (m, d) <= (bm, bd):
            return replace(a, value=cf.value, text=an.text[a.start : b.end], implied=True), None
        outside = outside or a
    return None, outside


def range_end(first: Fact, an: Analysis) -> Fact:
    """The other end of the range of ``an`` that starts with ``first``."""
    return next(b for a, b in _pairs(an, first.kind, first.dim or None) if a is first)


def range_text(first: Fact, an: Analysis) -> str:
    """How a range that starts with ``first`` is written back ("09:00–18:00")."""
    low, high = first.describe(), range_end(first, an).describe()
    # the unit and the period once: "10–15 EUR a month", not "10 EUR a month–15 EUR a month"
    shared = 0
    while shared < min(len(low), len(high)) and low[-1 - shared] == high[-1 - shared]:
        shared += 1
    cut = low.find(" ", len(low) - shared)
    if first.kind == "quantity" and cut > 0 and any(ch.isdigit() for ch in low[:cut]):
        low = low[:cut]
    return f"{low}–{high}"


def every_day(cf: Fact, an: Analysis) -> Fact | None:
    """What in ``an`` holds the claim's weekday when it runs on every day ("7 days a week")."""
    m = _EVERY_DAY.search(an.text_low) if cf.kind == "weekday" else None
    return Fact("weekday", cf.value, m.group(0), 0, 0, weak=True, implied=True) if m else None


def _version(value: object) -> tuple[str, tuple[int, ...]] | None:
    """("python", (3, 12)) of "python 3.12"; None for what is not a dotted release number."""
    name, _, number = str(value).rpartition(" ")
    parts = number.split(".")
    return (name, tuple(int(p) for p in parts)) if len(parts) >= 2 and all(p.isdigit() for p in parts) else None


def version_in_range(cf: Fact, an: Analysis) -> Fact | None:
    """A release range of ``an`` that holds the claim's version ("2.3.0 through 2.3.4" holds 2.3.2,
    at the precision the range is written in, and of the same product where the range names one);
    a version outside every range is simply not found."""
    found = _version(cf.value) if cf.kind == "entity" and cf.dim == "identifier" else None
    if found is None:
        return None
    name, v = found
    for a, b in _pairs(an, "entity", "identifier"):
        lo, hi = _version(a.value), _version(b.value)
        if lo is None or hi is None or not len(lo[1]) == len(hi[1]) == len(v):
            continue
        same = name == lo[0] or (lo[0] == "" and name in RELEASE_WORDS)
        if same and lo[1] <= v <= hi[1]:
            return a
    return None
