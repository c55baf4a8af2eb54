"""Facts (:class:`Fact`):

* ``quantity`` -- a number with its unit, normalised to a base unit: ``1,000`` = ``1000``,
  ``twelve`` = ``12``, ``1.5 million`` = ``1500000``, ``28 days`` = ``four weeks`` =
  2419200 s, ``1.2 km`` = ``1,200 metres``, ``50%`` = ``50 percent`` = ``half of``,
  ``$49`` = ``49 dollars``, ``100 °C`` = ``212 °F``; rates (``1,000 requests per minute`` =
  ``1000 req/min``); bounds (``at least``, ``up to``, ``more than``, ``under``) and
  approximations (``about``, ``roughly``: ±10 %). A number without a physical unit is a
  *count* keyed by the noun that follows it (``420 beds`` → ``count:bed``).
* ``date`` -- ``(year, month, day)`` with unknown parts ``None``: ISO ``2021-03-03``,
  ``March 3, 2021``, ``3 March 2021``, ``5–7 June 2024``, ``March 2020``, bare years.
* ``time`` -- clock times (``2 a.m.`` = ``02:00``), minutes after midnight.
* ``entity`` -- proper nouns (capitalised words not opening a sentence, acronyms,
  names known from the other texts of the same call) and identifiers (``Python 3.12``).
* ``ordinal`` and ``weekday`` -- weak facts: they can conflict, but a claim is not
  "unverifiable" merely because the source does not repeat them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import cast

DateValue = tuple[int | None, int | None, int | None]


@dataclass(frozen=True)
class Fact:
    kind: str  # quantity | date | time | entity | ordinal | weekday
    value: object
    text: str
    start: int
    end: int
    dim: str = ""  # quantity dimension (length, duration, currency:USD, count, percent, ...)
    unit: str = ""  # canonical surface unit (km, day, %, USD) -- "" for counts
    noun: tuple[str, ...] = ()  # count nouns (stemmed)
    per: str = ""  # rate denominator dimension ("duration", or a noun)
    period: str = ""  # a rate's duration unit as written ("month" of "€12 a month"), for describe()
    bound: str = "eq"  # eq | approx | ge | gt | le | lt
    raw: float | None = None  # the number as written, before unit conversion
    weak: bool = False  # absence is not a reason for "unverifiable"
    tokens: tuple[int, ...] = ()  # token indices this fact covers
    implied: bool = False  # worked out from other facts (facts/implied.py), not written

    @property
    def num_value(self) -> float:
        """``value`` of a quantity or time fact (an int or a float)."""
        return cast(float, self.value)

    @property
    def date_value(self) -> DateValue:
        """``value`` of a date fact: ``(year, month, day)``, unknown parts ``None``."""
        return cast(DateValue, self.value)

    def describe(self) -> str:
        # kept on the fact once written out: a claim of many values against a sentence of many
        # gives every pair a conflict, and each names both values (a frozen dataclass: the cache
        # is no field, so equality and hashing never see it)
        described = self.__dict__.get("_described")
        if described is None:
            described = self._describe()
            object.__setattr__(self, "_described", described)
        return described

    def _describe(self) -> str:
        if self.kind == "date":
            y, m, d = self.date_value
            if self.dim == "decade":
                return f"the {y}s"
            prefix = _ORDER_PREFIX.get(self.bound, "")
            if self.dim == "quarter" and m:
                return f"{prefix}Q{(m + 2) // 3} {y}" if y else f"{prefix}Q{(m + 2) // 3}"
            if y and m and d:
                return f"{prefix}{y:04d}-{m:02d}-{d:02d}"
            if y and m:
                return f"{prefix}{y:04d}-{m:02d}"
            parts = [str(y) if y else None, _MONTH_NAMES[m] if m else None, str(d) if d else None]
            return prefix + " ".join(p for p in parts if p)
        if self.kind == "time":
            v = int(self.num_value)
            return f"{_ORDER_PREFIX.get(self.bound, '')}{v // 60:02d}:{v % 60:02d}"
        if self.kind == "quantity":
            return _describe_quantity(self)
        return self.text


#: How a bound on a date or a clock time is written back ("before 2000", "by 18:00").
_ORDER_PREFIX = {"gt": "after ", "lt": "before ", "le": "by ", "ge": "from "}

_MONTH_NAMES = [
    None,
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _fmt_number(x: float) -> str:
    if x is None or math.isinf(x):
        return str(x)
    if abs(x - round(x)) < 1e-9 and abs(x) < 1e15:
        return str(int(round(x)))
    return f"{x:.6g}"


#: How a rate's duration reads in a reason ("12 USD a month", "1000 requests an hour").
_PERIOD_NAMES = {"h": "hour", "min": "minute", "s": "second", "ms": "millisecond"}


def _describe_quantity(f: Fact) -> str:
    """The amount as written, with its unit and, for a rate over time, the period: a reason that
    says "12 USD a month" against "12 USD a year" shows what differs."""
    text = _describe_amount(f)
    if f.per == "duration" and f.period:
        name = _PERIOD_NAMES.get(f.period, f.period)
        text += f" {'an' if name[0] in 'aeiou' or name == 'hour' else 'a'} {name}"
    elif f.per and f.per != "duration" and not f.per.startswith("interval") and "/" not in f.unit:
        text += f" per {f.per}"
    return text


def _describe_amount(f: Fact) -> str:
    prefix = {"ge": "at least ", "gt": "more than ", "le": "up to ", "lt": "less than ", "approx": "about "}.get(
        f.bound, ""
    )
    raw = _fmt_number(f.raw if f.raw is not None else float(f.num_value))
    if f.dim.startswith("currency:"):
        unit = f.dim.split(":", 1)[1]
        return f"{prefix}{raw} {unit}"
    unit = f.unit or (_noun_as_written(f) if f.noun else "")
    if unit == "h" and f.raw is not None and f.raw != int(f.raw) and abs(f.raw * 60 - round(f.raw * 60)) < 1e-3:
        minutes = f"{round((f.raw - int(f.raw)) * 60)} min"  # "2 hours 40 minutes", "half an hour"
        return f"{prefix}{int(f.raw)} h {minutes}" if int(f.raw) else f"{prefix}{minutes}"
    if unit == "min" and f.raw is not None and f.raw != int(f.raw) and abs(f.raw * 60 - round(f.raw * 60)) < 1e-3:
        seconds = f"{round((f.raw - int(f.raw)) * 60)} s"  # "6 min 17 s", "a quarter of a minute"
        return f"{prefix}{int(f.raw)} min {seconds}" if int(f.raw) else f"{prefix}{seconds}"
    if unit == "%":
        return f"{prefix}{raw}%"
    if f.dim == "duration" and unit in _PLURALS and raw != "1":
        unit = _PLURALS[unit]  # "4 months", as a reason should read
    return f"{prefix}{raw} {unit}".strip()


def _noun_as_written(f: Fact) -> str:
    """The counted noun as the text writes it: of the words after the number ("420 hospital
    beds", "150 people came", "a 70 Wh battery"), the last written in the plural, else the last."""
    words = re.findall(r"[^\W\d_]+", f.text.lower())
    written = [next((w for w in words if w.startswith(n)), n) for n in f.noun]
    if f.noun[0] == "person" and f.raw != 1:
        written[0] = "people"
    return next((w for w in reversed(written) if w.endswith("s") or w == "people"), written[-1])


#: The durations whose unit a reason writes as a word, in the plural.
_PLURALS = {
    "day": "days",
    "week": "weeks",
    "fortnight": "fortnights",
    "month": "months",
    "year": "years",
    "decade": "decades",
    "century": "centuries",
}
