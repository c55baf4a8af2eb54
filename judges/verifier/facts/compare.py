"""How a claim fact relates to a source fact: "match", "conflict", "unit" (same number, another
unit), "compatible" or "none" (not about the same thing)."""

from __future__ import annotations

import math

from .fact import DateValue, Fact
from .lexicon import words_match

_REL_TOL_SAME_UNIT = 1e-6
_REL_TOL_CONVERTED = 0.02
_APPROX_TOL = 0.10
#: How far "about 09:00" reaches, in minutes.
_ABOUT_MINUTES = 10
#: Months run from 28 to 31 days: a count of weeks or days for months is rounded to whole weeks
#: ("four months" = 16 or 17 weeks, 8 % apart).
_MONTH_IN_WEEKS = 0.10
#: A value converted from another unit is usually rounded as written ("10 kg (23 lb)": 23 lb is
#: 10.43 kg): half a unit of the last written digit counts, up to this share of the value.
_MAX_ROUNDING = 0.05


def _rounding(f: Fact) -> float:
    """Half a unit of ``f``'s last written digit, relative to its value ("10" 5 %, "460" 1.1 %,
    "2.5" 2 %). Trailing zeros of a number of 100 or more count as rounding ("1,200")."""
    if f.raw is None or f.raw == 0 or not math.isfinite(f.raw):
        return 0.0  # a 400-digit number is read as infinity: no digits to round
    r = abs(f.raw)
    if r == int(r):
        n, step = int(r), 1
        while n >= 100 and n % 10 == 0:
            n, step = n // 10, step * 10
        return step / 2 / r
    decimals = len(repr(r).split(".")[1]) if "." in repr(r) else 0
    return 0.5 * 10.0**-decimals / r


def _interval(f: Fact) -> tuple[float, float, bool, bool]:
    v = float(f.num_value)
    if f.bound == "approx":
        d = abs(v) * _APPROX_TOL
        return v - d, v + d, False, False
    if f.bound in ("ge", "gt"):
        return v, math.inf, f.bound == "gt", False
    if f.bound in ("le", "lt"):
        return -math.inf, v, False, f.bound == "lt"
    return v, v, False, False


def _close(a: float, b: float, tol: float) -> bool:
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b  # a 400-digit number reads as infinity, which is near nothing but itself
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-12)


def _same_slot(c: Fact, s: Fact) -> bool:
    if c.dim != s.dim or c.per != s.per:
        return False
    if c.dim == "count":
        if c.noun and s.noun:
            return any(words_match(a, b) for a in c.noun for b in s.noun)
        # a bare number may stand for a counted noun, unless one side is a weak "one ..."
        return not (c.weak or s.weak)
    return True


#: Bounds that stay near their number ("just over 14,800" is no 18,420), and how near.
_NEAR_BOUNDS = ("just ", "slightly ", "a little ")
_NEAR = 0.10

#: How a claim states an allowance (the most one gets), not a bound of what one has.
_ALLOWANCES = ("up to", "a maximum of", "maximum of")


def compare_quantities(c: Fact, s: Fact) -> str:
    """ "match", "conflict", "unit" (same number, different unit of the same kind) or "compatible"."""
    if (
        c.raw is not None
        and s.raw is not None
        and c.unit
        and s.unit
        and c.unit != s.unit
        and _close(c.raw, s.raw, 1e-9)
        and c.dim == s.dim
        and not _close(float(c.num_value), float(s.num_value), 0.02)
    ):
        return "unit"
    if c.unit == s.unit:
        tol = _REL_TOL_SAME_UNIT
    else:
        tol = min(_MAX_ROUNDING, max(_REL_TOL_CONVERTED, _rounding(c), _rounding(s)))
        if "month" in (c.unit, s.unit) and {c.unit, s.unit} & {"week", "day"}:
            tol = _MONTH_IN_WEEKS  # "four months" is "16 weeks" as often as "17 weeks"
    cv, sv = float(c.num_value), float(s.num_value)
    if c.bound in ("gt", "lt") and s.bound in ("eq", "approx") and c.text.lower().startswith(_NEAR_BOUNDS):
        beyond = sv > cv if c.bound == "gt" else sv < cv
        return "match" if beyond and _close(cv, sv, _NEAR) else "conflict"
    if c.bound == s.bound and c.bound in ("ge", "gt", "le", "lt"):
        return "match" if _close(cv, sv, tol) else "conflict"
    if c.bound == "eq" and s.bound == "eq":
        return "match" if _close(cv, sv, tol) else "conflict"
    clo, chi, _, _ = _interval(c)
    slo, shi, _, _ = _interval(s)
    slack = tol * max(abs(cv), abs(sv), 1e-12)
    if chi + slack < slo or shi + slack < clo:
        return "conflict"
    if c.bound in ("gt",) and shi <= cv + 0 and s.bound == "eq":
        return "conflict"
    if c.bound in ("lt",) and slo >= cv and s.bound == "eq":
        return "conflict"
    if c.bound == "le" and s.bound == "eq" and c.text.lower().startswith(_ALLOWANCES) and not _close(cv, sv, tol):
        return "conflict"  # "up to 50 seats" is an allowance of 50: "25 seats" is another
    if clo - slack <= slo and shi <= chi + slack:
        return "match"  # the claim is as weak as or weaker than the source
    if c.bound in ("eq", "approx") and s.bound in ("le", "ge", "approx") and _close(cv, sv, max(tol, 0.001)):
        return "match"
    if c.bound == "approx" and s.bound in ("gt", "lt") and _close(cv, sv, max(tol, 0.001)):
        return "match"  # "roughly 5,000 people" and "over 5,000 people"
    if c.bound == s.bound == "approx" and _close(cv, sv, _APPROX_TOL):
        return "match"  # "about two thirds" and "about 67%"
    if c.dim == "duration" and {c.bound, s.bound} == {"eq", "gt"} and _close(cv, sv, tol):
        return "match"  # "over three years" is as often "during" as "more than"
    return "compatible"


#: A count at least this large, stated with the same value on both sides, is the same count even
#: when its noun is paraphrased ("12,450 employees" = "employs 12,450 people"); small counts
#: recur for different things ("3 projects", "3 days").
DISTINCTIVE_COUNT = 100


def _distinctive(c: Fact, s: Fact) -> bool:
    v = float(c.num_value)
    alike = c.bound == s.bound or {c.bound, s.bound} == {"eq", "approx"}  # "around 900 employees"
    return alike and abs(v) >= DISTINCTIVE_COUNT and _close(v, float(s.num_value), _REL_TOL_SAME_UNIT)


def _dates_relation(c: DateValue, s: DateValue) -> str:
    agree = True
    for a, b in zip(c, s):
        if a is not None and b is not None and a != b:
            return "conflict"
        if a is not None and b is None:
            agree = False
    return "match" if agree else "compatible"


def _quarter_relation(c: Fact, s: Fact) -> str:
    """A quarter ("Q3 2023") against a quarter or a month: the same quarter matches, another
    conflicts; a month inside the claim's quarter matches it ("September 2023" holds "Q3 2023"),
    a quarter of the source says too little for the claim's month."""
    (cy, cm, _), (sy, sm, _) = c.date_value, s.date_value
    if s.dim == "decade" or cm is None or sm is None or s.bound != "eq":
        return "compatible" if cy is None or sy is None or cy == sy or s.dim == "decade" else "conflict"
    cq, sq = (cm - 1) // 3, (sm - 1) // 3
    if c.bound != "eq":  # "before Q3 2023" holds May 2023 and Q2 2023, not August 2023
        if (cy is None) != (sy is None):
            return "compatible"
        order = (sy or 0, sq) > (cy or 0, cq), (sy or 0, sq) == (cy or 0, cq)
        after, same = order
        inside = {"lt": not after and not same, "le": not after, "gt": after, "ge": after or same}[c.bound]
        return "match" if inside else "conflict"
    if cy is not None and sy is not None and cy != sy:
        return "conflict"
    if cq != sq:
        return "conflict"
    if c.dim == "quarter" and (cy is None or sy is not None):
        return "match"
    return "compatible"


def _date_order(s: DateValue, c: DateValue) -> int | None:
    """-1, 0 or 1 as ``s`` is before, within or after ``c`` at ``c``'s precision (year, then month,
    then day); None when ``s`` is too coarse to tell ("2019" against "before March 2019")."""
    for a, b in zip(s, c):
        if a is None and b is None:
            continue  # neither gives the year ("before April" and "31 March")
        if b is None:
            return 0
        if a is None:
            return None
        if a != b:
            return -1 if a < b else 1
    return 0


def _exact(c: Fact, s: Fact) -> bool:
    """Same value (whatever the bound words), not just a value inside the claim's bounds."""
    if c.kind != "quantity" or s.kind != "quantity":
        return True  # a bare number found inside an identifier ("429" in "HTTP 429") is that number
    return _close(float(c.num_value), float(s.num_value), 0.02)


#: The noun of a count of occurrences ("five times").
OCCURRENCES = ("time",)


#: What may name a bare release number ("Version 2.4.0" is the "[2.4.0]" of a changelog).
RELEASE_WORDS = frozenset({"", "version", "versions", "v", "release", "build"})


def _same_release(a: str, b: str) -> bool:
    """ "version 2.4.0" and "2.4.0": one dotted release number, named by a release word or not."""
    (an, _, anum), (bn, _, bnum) = a.rpartition(" "), b.rpartition(" ")
    return anum == bnum and "." in anum and an in RELEASE_WORDS and bn in RELEASE_WORDS


def _fact_relation(c: Fact, s: Fact) -> str:
    if c.kind != s.kind:
        return "none"
    if c.kind == "quantity":
        if c.dim != s.dim or c.per != s.per:
            return "none"
        rel = compare_quantities(c, s)
        if rel == "unit":
            return "unit"
        if rel == "match":
            # a claim's "five times" counts occurrences of whatever the source counts ("five
            # consecutive failed attempts"); a source's "3 times" is still no "3 projects"
            occurrences = c.noun == OCCURRENCES
            if c.dim == "count" and c.noun and s.noun and not occurrences and not _same_slot(c, s):
                if not _distinctive(c, s):
                    return "none"
            return "match"
        return rel if _same_slot(c, s) else "none"
    if c.kind == "date" and "decade" in (c.dim, s.dim):
        # "in the 1990s" holds 1994; "in 1994" is more than "the 1990s" says
        if (c.date_value[0] or 0) // 10 != (s.date_value[0] or 0) // 10:
            return "conflict"
        return "match" if c.dim == "decade" else "compatible"
    if c.kind == "date" and "quarter" in (c.dim, s.dim):
        return _quarter_relation(c, s)
    if c.kind == "date" and c.bound != "eq" and s.bound == "eq":
        # "founded before 2000" holds 1998 and not 2003 (at the claim's precision)
        order = _date_order(s.date_value, c.date_value)
        if order is None:
            return "compatible"
        inside = {"lt": order < 0, "gt": order > 0, "le": order <= 0, "ge": order >= 0}[c.bound]
        return "match" if inside else "conflict"
    if c.kind == "date" and c.bound == "lt" and s.bound in ("lt", "le") and c.date_value[2] is None:
        # "before April" holds "until 31 March" (but "by 31 October" is a deadline: another
        # deadline is a conflict, as two dates are)
        order = _date_order(s.date_value, c.date_value)
        return "match" if order is not None and order < 0 else "compatible"
    if c.kind == "date" and s.bound != c.bound:
        return "compatible"  # a bound in the source says too little for or against a date
    if c.kind == "date":
        return _dates_relation(c.date_value, s.date_value)
    if c.kind == "time" and "approx" in (c.bound, s.bound):
        return "match" if abs(c.num_value - s.num_value) <= _ABOUT_MINUTES else "conflict"
    if c.kind == "time" and c.bound != "eq" and s.bound == "eq":
        # "arrives after noon" and "arrives at 13:45"; minutes of one day
        cv, sv = c.num_value, s.num_value
        inside = {"gt": sv > cv, "lt": sv < cv, "le": sv <= cv}[c.bound]
        return "match" if inside else "conflict"
    if c.kind == "weekday" and (isinstance(c.value, tuple) or isinstance(s.value, tuple)):
        # a range of days: "Sunday" is outside "Monday to Saturday", which says nothing of it
        cs = set(c.value) if isinstance(c.value, tuple) else {c.value}
        ss = set(s.value) if isinstance(s.value, tuple) else {s.value}
        return "match" if cs <= ss else "none"
    if c.kind == "time" and c.bound == "eq" and s.bound in ("lt", "le", "gt", "ge"):
        # "an order placed at 11:00" and "orders placed before 2 p.m."
        cv, sv = c.num_value, s.num_value
        inside = {"gt": cv > sv, "lt": cv < sv, "le": cv <= sv, "ge": cv >= sv}[s.bound]
        return "match" if inside else "conflict"
    if c.kind in ("time", "ordinal", "weekday"):
        return "match" if c.value == s.value else "conflict"
    if c.kind == "entity":
        if c.dim == "identifier" and s.dim == "identifier":
            cn, sn = str(c.value).split(" ")[0], str(s.value).split(" ")[0]
            if c.value == s.value or _same_release(str(c.value), str(s.value)):
                return "match"
            return "conflict" if cn == sn and cn else "none"
        return "match" if c.value == s.value else "none"
    return "none"
