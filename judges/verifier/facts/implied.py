"""Facts a sentence implies by arithmetic (docs/verifier.md, "How a verdict is made", step 2): the
years between two years it states ("reigned from 1837 until 1901" → 64 years), the time between
two clock times ("from 10:00 to 12:00" → 2 hours), the end of a duration from a clock time
("departs at 08:30", "takes about 1 hour" → 09:30), the change in percent between two amounts
("from $40 million … to $50 million" → 25 %) and a share of an
amount it states ("revenue of $310 million … 70 percent of revenue" → about $217 million). An
implied fact only ever *matches* a claim's fact -- it never conflicts with one, since which two
values the arithmetic should join is a guess."""

from __future__ import annotations

from datetime import date

from .fact import Fact
from .lexicon import _YEAR

#: Spans longer than this are not a span of anything a claim would count in years.
MAX_YEARS = 200
#: Days between two dates further apart than this are not what a claim counts in days.
MAX_DAYS = 366
_DAY = 86400.0
_DAY_MINUTES = 24 * 60
#: Percent changes above this are no change a claim would state as one.
MAX_CHANGE = 1000
#: The noun of an implied percent change (align reads it only for a claim's change).
CHANGE = ("change",)
#: The noun of an implied difference between two sums of money ("€390" and "€290" -> €100), or
#: two values of another kind.
DIFFERENCE = ("difference",)
#: The noun of an implied sum of two values of one kind ("25 days … plus 8 public holidays").
SUM = ("sum",)
#: A sentence listing many values implies more pairs than is worth comparing.
MAX_IMPLIED = 40
#: The values of one kind paired, the first in the text: pairs that imply nothing (equal amounts,
#: other units) never reach MAX_IMPLIED, and 615 of them in one source cost ~0.3 s of CPU on every
#: text that holds them (facts/work.py). A sentence a claim rests on holds a handful.
MAX_PAIRED = 150


def implied_facts(facts: list[Fact]) -> list[Fact]:
    """At most ``MAX_IMPLIED``, built no further than that: a long source listing a hundred years
    would otherwise cost thousands of pairs on every check that reads it (issue 14's budget)."""
    out: list[Fact] = []
    years = sorted({f.date_value[0] for f in facts if f.kind == "date" and f.date_value[0]})[:MAX_PAIRED]
    for i, first in enumerate(years):
        for last in years[i + 1 :]:
            n = last - first
            if len(out) >= MAX_IMPLIED:
                return out
            if 0 < n <= MAX_YEARS:
                out.append(_duration(n * _YEAR, f"{first} to {last}", "year", n))
    # the days between two days of the year ("runs from 3 June to 7 June" -> 5 days, counting
    # both ends, or 4 between them: an implied fact only matches, so either reading may)
    # a day written without its year is read in the year of the other ("from 12 April to 30 June
    # 2025" -> 80 days)
    dated = sorted({f.date_value for f in facts if f.kind == "date" and f.date_value[1] and f.date_value[2]}, key=str)
    dated = dated[:MAX_PAIRED]
    gaps = set()
    for i, early in enumerate(dated):
        for late in dated[i + 1 :]:
            year = early[0] or late[0] if not (early[0] and late[0]) else None
            da = _ordinal_day((year, early[1], early[2]) if year else early)
            db = _ordinal_day((year, late[1], late[2]) if year else late)
            if da is not None and db is not None and da != db:
                gaps.add(abs(db - da))
    for n in sorted(gaps):
        for count in (n, n + 1) if n <= MAX_DAYS else ():
            if len(out) >= MAX_IMPLIED:
                return out
            out.append(_duration(count * _DAY, f"{count} days", "day", count))
    # the time between two clock times ("began at 10:00 and ended at 12:00" -> 2 hours)
    times = sorted({int(f.num_value) for f in facts if f.kind == "time" and f.bound == "eq"})[:MAX_PAIRED]
    for i, first in enumerate(times):
        for last in times[i + 1 :]:
            if len(out) >= MAX_IMPLIED:
                return out
            minutes = last - first
            hours = minutes % 60 == 0
            text = f"{first // 60:02d}:{first % 60:02d} to {last // 60:02d}:{last % 60:02d}"
            out.append(_duration(minutes * 60.0, text, "h" if hours else "min", minutes // 60 if hours else minutes))
    # a clock time and a duration: when it ends ("departs at 08:30" + "takes about 1 hour" -> 09:30)
    lengths = [
        f for f in facts if f.kind == "quantity" and f.dim == "duration" and not f.per and f.bound in ("eq", "approx")
    ][:MAX_PAIRED]
    for start in times:
        for length in lengths:
            minutes = round(length.num_value / 60)
            if not 0 < minutes < _DAY_MINUTES:
                continue
            if len(out) >= MAX_IMPLIED:
                return out
            end = (start + minutes) % _DAY_MINUTES
            text = f"{start // 60:02d}:{start % 60:02d} + {length.text}"
            out.append(Fact("time", end, text, 0, 0, implied=True))
    # a date and a length of time: when it ends ("begins on 1 April 2024 and continues for 24
    # months" -> 31 March 2026; "delivered on 12 March 2023" + "a 24-month guarantee" -> March
    # 2025), the last day counted in or not
    days = [f for f in facts if f.kind == "date" and f.bound == "eq" and not f.dim and all(f.date_value)][:MAX_PAIRED]
    for day in days:
        for length in lengths:
            for ending in _after(day.date_value, length):
                if len(out) >= MAX_IMPLIED:
                    return out
                out.append(Fact("date", ending, f"{day.text} + {length.text}", 0, 0, implied=True))
    amounts = [
        f
        for f in facts
        if f.kind == "quantity" and (f.dim.startswith("currency:") or f.dim == "count") and f.bound in ("eq", "approx")
    ][:MAX_PAIRED]
    shares = [
        f
        for f in facts
        if f.kind == "quantity" and f.dim == "percent" and f.bound in ("eq", "approx") and 0 < f.num_value < 100
    ][:MAX_PAIRED]
    # the change between two amounts of one kind, in percent ("from $40 million in 2022 to $50
    # million in 2023" -> 25 %): matched only by a claim's change ("increased by 25%", align)
    for i, before in enumerate(amounts):
        for after in amounts[i + 1 :]:
            if after.dim != before.dim or after.noun != before.noun or before.num_value <= 0:
                continue
            change = abs(after.num_value - before.num_value) / before.num_value * 100
            if not 0 < change < MAX_CHANGE:
                continue
            if len(out) >= MAX_IMPLIED:
                return out
            out.append(
                Fact(
                    "quantity",
                    round(change, 6),
                    f"{before.text} to {after.text}",
                    0,
                    0,
                    dim="percent",
                    unit="%",
                    noun=CHANGE,
                    raw=round(change, 6),
                    implied=True,
                )
            )
    # the difference between two sums of money ("€290 until 31 March; the regular price … €390"
    # -> €100): matched only by a claim's difference ("saves €100", "€50 more than", align)
    sums = [f for f in amounts if f.dim.startswith("currency:") and not f.per]
    for i, a in enumerate(sums):
        for b in sums[i + 1 :]:
            gap = abs(a.num_value - b.num_value)
            if b.dim != a.dim or gap <= 0:
                continue
            if len(out) >= MAX_IMPLIED:
                return out
            text = f"{max(a, b, key=lambda f: f.num_value).text} − {min(a, b, key=lambda f: f.num_value).text}"
            out.append(
                Fact("quantity", gap, text, 0, 0, dim=a.dim, unit=a.unit, noun=DIFFERENCE, raw=gap, implied=True)
            )
    # the difference and the sum of two values of one kind besides money ("48.8 °C" and "48.0 °C"
    # -> 0.8 °C higher; "2:06:12" and "2:06:40" -> 28 seconds behind; "25 days of leave, plus 8
    # public holidays" -> 33 days): matched only by a claim that speaks of one (align)
    values = [
        f
        for f in facts
        if f.kind == "quantity"
        and f.bound in ("eq", "approx")
        and not f.per
        and not f.dim.startswith("currency:")
        and f.dim not in ("percent", "count")
    ][:MAX_PAIRED]
    for i, a in enumerate(values):
        for b in values[i + 1 :]:
            if b.dim != a.dim:
                continue
            gap, total = abs(a.num_value - b.num_value), a.num_value + b.num_value
            if gap <= 0:
                continue
            if len(out) + 2 > MAX_IMPLIED:
                return out
            hi, lo = max(a, b, key=lambda f: f.num_value), min(a, b, key=lambda f: f.num_value)
            out.append(
                Fact(
                    "quantity",
                    gap,
                    f"{hi.text} − {lo.text}",
                    0,
                    0,
                    dim=a.dim,
                    unit=a.unit,
                    noun=DIFFERENCE,
                    implied=True,
                )
            )
            out.append(
                Fact("quantity", total, f"{a.text} + {b.text}", 0, 0, dim=a.dim, unit=a.unit, noun=SUM, implied=True)
            )
    for share in shares:
        for amount in amounts:
            if len(out) >= MAX_IMPLIED:
                return out
            out.append(
                Fact(
                    "quantity",
                    amount.num_value * share.num_value / 100,
                    f"{share.text} of {amount.text}",
                    0,
                    0,
                    dim=amount.dim,
                    unit=amount.unit,
                    noun=amount.noun,
                    bound="approx",  # a share of a rounded amount is only about that much
                    implied=True,
                )
            )
    return out


def _duration(seconds: float, text: str, unit: str, raw: int) -> Fact:
    """An implied duration, in seconds, as written in ``unit``."""
    return Fact("quantity", seconds, text, 0, 0, dim="duration", unit=unit, raw=float(raw), implied=True)


#: The longest length of time that dates are counted on by (ten years).
MAX_SPAN_DAYS = 3660


def _after(start: tuple, length: Fact) -> list[tuple[int, int, int]]:
    """The day ``length`` after ``start`` and the day before it (whole months and years on the
    calendar, "24 months" from 1 April 2024 is 1 April 2026); none for a length under a day or
    over ten years."""
    seconds = length.num_value
    if not _DAY <= seconds <= MAX_SPAN_DAYS * _DAY or length.raw is None:
        return []
    y, m, d = start
    if length.unit in ("month", "year", "decade"):
        months = round(length.raw * {"month": 1, "year": 12, "decade": 120}[length.unit])
        y, m = y + (m - 1 + months) // 12, (m - 1 + months) % 12 + 1
        first = _ordinal_day((y, m, min(d, 28))) if d > 28 else _ordinal_day((y, m, d))
    else:
        begin = _ordinal_day(start)
        first = None if begin is None else begin + round(seconds / _DAY)
    if first is None:
        return []
    try:
        days = (date.fromordinal(first), date.fromordinal(first - 1))
    except (ValueError, OverflowError):  # past the year 9999
        return []
    return [(x.year, x.month, x.day) for x in days]


def _ordinal_day(value: tuple) -> int | None:
    """The day's number counted from year 1 (a date without a year is read in a common year)."""
    y, m, d = value
    try:
        return date(y or 2001, m, d).toordinal()
    except ValueError:
        return None
