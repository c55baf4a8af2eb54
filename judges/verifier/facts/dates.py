"""Date, weekday and clock-time facts."""

from __future__ import annotations

import calendar
import re
from dataclasses import replace

from .fact import Fact
from .lexicon import (
    _FILLER,
    _MONTHS,
    _SCALES,
    _UNITS,
    _WEEKDAYS,
    _YEAR_PREPOSITIONS,
    STOPWORDS,
    has_s_ending,
)
from .tokens import Token

_MONTH_ABBREVIATIONS = frozenset("jan feb mar apr jun jul aug sep sept oct nov dec".split())


def _next_word(tokens: list[Token], i: int, skip: str = ",") -> int | None:
    j = i + 1
    while j < len(tokens) and tokens[j].kind == "sym" and tokens[j].text in skip:
        j += 1
    return j if j < len(tokens) else None


def _month_at(tokens: list[Token], i: int) -> int | None:
    t = tokens[i]
    low = t.low.rstrip(".")
    head, _, month = low.partition("-")
    if t.kind == "word" and head in ("mid", "early", "late") and month in _MONTHS and len(month) > 3:
        return _MONTHS[month]  # "returned in mid-January": a time in that month
    if t.kind != "word" or not t.text[0].isupper():
        return None
    if low not in _MONTHS:
        return None
    if low == "may":
        # "May" is a month only next to a number: "May 2021", "3 May", "in May 2020"
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        prv = tokens[i - 1] if i > 0 else None
        near_number = (nxt is not None and nxt.kind == "num") or (prv is not None and prv.kind == "num")
        after_prep = prv is not None and prv.low in ("in", "of", "since", "until", "by", "early", "late", "mid")
        if not (near_number or after_prep):
            return None
    if (
        low in ("mar", "jan", "jun", "jul", "aug", "sep", "oct", "nov", "dec", "feb", "apr", "sept")
        and t.text != t.text.capitalize()
    ):
        return None
    return _MONTHS[low]


def _day_at(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """(day, last token index) for "5", "5th", "5 th" at i."""
    t = tokens[i]
    if t.kind != "num" or not re.fullmatch(r"\d{1,2}", t.text):
        return None
    d = int(t.text)
    if not 1 <= d <= 31:
        return None
    end = i
    if (
        i + 1 < len(tokens)
        and tokens[i + 1].kind == "word"
        and tokens[i + 1].low in ("st", "nd", "rd", "th")
        and tokens[i + 1].start == t.end
    ):
        end = i + 1
    return d, end


#: Plural nouns without a final "s": a year-like number before them is a count ("2000 people").
_PLURALS_WITHOUT_S = frozenset(
    "people children men women staff personnel sheep fish deer cattle police crew feet teeth mice geese data".split()
)


def _counts(word: str) -> bool:
    """Whether a number before this word counts it: a plural noun ("2000 requests", "1500 people")
    or an abbreviation ("req"); a year names a singular noun ("the 2016 report", "the 2019 season")."""
    if word in _PLURALS_WITHOUT_S or len(word) <= 3:
        return True
    return has_s_ending(word)


def _numeric_date(tokens: list[Token], i: int) -> tuple[tuple, int] | None:
    """A date in digits and its last token: "31.12.2024" (day first), "31/12/2024" and
    "12/31/2024" (the order told by a number over 12). "03/04/2024" could be either, so only
    its year is read (a claim of 3 April is then neither confirmed nor contradicted by it)."""
    t = tokens[i]
    dotted = re.fullmatch(r"(\d{1,2})\.(\d{1,2})\.(\d{4})", t.text)
    if dotted:
        d, m, y = (int(x) for x in dotted.groups())
        return ((y, m, d), i) if 1 <= m <= 12 and 1 <= d <= 31 else None
    if i + 4 >= len(tokens) or not re.fullmatch(r"\d{1,2}", t.text):
        return None
    parts = tokens[i : i + 5]
    if [p.text for p in parts[1::2]] != ["/", "/"] or any(a.end != b.start for a, b in zip(parts, parts[1:])):
        return None
    if not re.fullmatch(r"\d{1,2}", parts[2].text) or not re.fullmatch(r"\d{4}", parts[4].text):
        return None
    a, b, y = int(parts[0].text), int(parts[2].text), int(parts[4].text)
    if not (1 <= a <= 31 and 1 <= b <= 31):
        return None
    if a > 12 and b <= 12:
        return (y, b, a), i + 4
    if b > 12 and a <= 12:
        return (y, a, b), i + 4
    if a <= 12 and b <= 12:
        return ((y, a, a) if a == b else (y, None, None)), i + 4
    return None  # no month at all ("13/13/2024")


def _year_at(tokens: list[Token], i: int) -> int | None:
    t = tokens[i]
    if t.kind == "num" and re.fullmatch(r"\d{4}", t.text):
        y = int(t.text)
        if 1000 <= y <= 2199:
            return y
    return None


_QUARTER_WORDS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_QUARTER_CODE = re.compile(r"q([1-4])")


def _quarter_at(tokens: list[Token], i: int) -> tuple[tuple, int, int] | None:
    """((year, first month of the quarter, None), first token, last token) for "Q3 2023", "Q3",
    "the third quarter of 2023", "3rd quarter", "third-quarter" starting at token ``i``."""
    t = tokens[i]
    q: int | None = None
    last = i
    if t.kind == "word" and (m := _QUARTER_CODE.fullmatch(t.low)):
        q = int(m.group(1))
    elif t.kind == "word" and t.low.endswith("-quarter") and t.low[: -len("-quarter")] in _QUARTER_WORDS:
        q = _QUARTER_WORDS[t.low[: -len("-quarter")]]
    else:
        word = t.low
        if t.kind == "num" and i + 1 < len(tokens) and tokens[i + 1].start == t.end:
            word, last = t.text + tokens[i + 1].low, i + 1  # "3rd"
        if word in _QUARTER_WORDS and last + 1 < len(tokens) and tokens[last + 1].low == "quarter":
            q, last = _QUARTER_WORDS[word], last + 1
    if q is None:
        return None
    year = None
    k = last + 1
    if k < len(tokens) and tokens[k].low == "of":
        k += 1
    if k < len(tokens) and (y := _year_at(tokens, k)) is not None:
        year, last = y, k
    return (year, 3 * q - 2, None), i, last


def _extract_dates(tokens: list[Token], used: set[int], facts: list[Fact], text: str) -> None:
    n = len(tokens)

    def add(value: tuple, i0: int, i1: int, weak: bool = False, dim: str = "") -> None:
        idx = tuple(range(i0, i1 + 1))
        used.update(idx)
        facts.append(
            Fact(
                "date",
                value,
                text[tokens[i0].start : tokens[i1].end],
                tokens[i0].start,
                tokens[i1].end,
                dim=dim,
                weak=weak,
                tokens=idx,
            )
        )

    for i in range(n):
        if i not in used and (quarter := _quarter_at(tokens, i)) is not None:
            value, first, last = quarter
            add(value, first, last, dim="quarter")

    for i, t in enumerate(tokens):
        if t.kind == "iso" and i not in used:
            y, m, d = (int(x) for x in t.text.split("-"))
            if 1 <= m <= 12 and 1 <= d <= 31:
                add((y, m, d), i, i)
        elif t.kind == "num" and i not in used and (numeric := _numeric_date(tokens, i)) is not None:
            value, last = numeric
            add(value, i, last)

    i = 0
    while i < n:
        if i in used:
            i += 1
            continue
        # Day [–Day] [of] Month [,] [Year]
        day = _day_at(tokens, i)
        if day is not None:
            d1, j = day
            # more days of the same month: "5–7 June", "12 and 13 May", "3, 4 and 5 June"
            days = [(d1, i, j)]
            k = j + 1
            while k + 1 < n and tokens[k].low in _DAY_JOINERS and (more := _day_at(tokens, k + 1)) is not None:
                days.append((more[0], k + 1, more[1]))
                k = more[1] + 1
            if k < n and tokens[k].low == "of":
                k += 1
            if k < n and _month_at(tokens, k):
                month = _month_at(tokens, k)
                end = k
                year = None
                k2 = _next_word(tokens, k, skip=",." if tokens[k].low in _MONTH_ABBREVIATIONS else ",")
                if k2 is not None and _year_at(tokens, k2):
                    year, end = _year_at(tokens, k2), k2
                for idx, (d, a, b) in enumerate(days):
                    add((year, month, d), a, end if idx == len(days) - 1 else b)
                i = end + 1
                continue
        month = _month_at(tokens, i)
        if month is not None:
            # "Feb. 1, 2025": the dot of an abbreviated month is no full stop
            abbreviated = tokens[i].low in _MONTH_ABBREVIATIONS and i + 1 < n and tokens[i + 1].start == tokens[i].end
            mk = _next_word(tokens, i, skip=",." if abbreviated else ",")
            if mk is not None and tokens[mk].low == "of":
                mk = _next_word(tokens, mk)
            if mk is not None and _year_at(tokens, mk) and not _day_at(tokens, mk):
                add((_year_at(tokens, mk), month, None), i, mk)
                i = mk + 1
                continue
            if mk is not None and (day1 := _day_at(tokens, mk)) is not None:
                d1, j = day1
                days = [(d1, mk, j)]
                k2 = j + 1
                if k2 + 1 < n and tokens[k2].text in ("–", "-", "—") and (day2 := _day_at(tokens, k2 + 1)) is not None:
                    d2, j2 = day2
                    days.append((d2, k2 + 1, j2))
                    j = j2
                yk = _next_word(tokens, j)
                year = None
                end = j
                if yk is not None and _year_at(tokens, yk):
                    year, end = _year_at(tokens, yk), yk
                for idx, (d, a, b) in enumerate(days):
                    add((year, month, d), i if idx == 0 else a, end if idx == len(days) - 1 else b)
                i = end + 1
                continue
            add((None, month, None), i, i)
            i += 1
            continue
        i += 1

    # Weekdays: weak facts; a range of them ("Monday to Saturday", "weekdays") is one fact whose
    # value is the days it spans
    for i, t in enumerate(tokens):
        if i in used or t.kind != "word":
            continue
        if t.low in _DAY_SETS:
            used.add(i)
            facts.append(Fact("weekday", _DAY_SETS[t.low], t.text, t.start, t.end, weak=True, tokens=(i,)))
        elif t.text[0].isupper() and t.low in _WEEKDAYS:
            last = i + 2
            if (
                last < len(tokens)
                and tokens[i + 1].low in _RANGE_WORDS
                and tokens[last].low in _WEEKDAYS
                and tokens[last].text[0].isupper()
            ):
                first_day, last_day = _WEEKDAYS[t.low], _WEEKDAYS[tokens[last].low]
                span_days = tuple(range(first_day, last_day + 1)) if first_day <= last_day else ()
                if span_days:
                    used.update((i, i + 1, last))
                    text_ = text[t.start : tokens[last].end]
                    facts.append(
                        Fact("weekday", span_days, text_, t.start, tokens[last].end, weak=True, tokens=(i, i + 1, last))
                    )
                    continue
            used.add(i)
            facts.append(Fact("weekday", _WEEKDAYS[t.low], t.text, t.start, t.end, weak=True, tokens=(i,)))

    # Bare years
    for i, t in enumerate(tokens):
        if i in used:
            continue
        year_ = _year_at(tokens, i)
        if year_ is None:
            continue
        prev = tokens[i - 1] if i > 0 else None
        nxt = tokens[i + 1] if i + 1 < n else None
        if prev is not None and prev.kind == "sym" and prev.text in "$€£¥":
            continue
        if nxt is not None and nxt.kind == "word" and nxt.start == t.end and nxt.low == "s":
            if year_ % 10 == 0:  # "the 1990s": any year of the decade
                used.update((i, i + 1))
                facts.append(
                    Fact(
                        "date",
                        (year_, None, None),
                        t.text + nxt.text,
                        t.start,
                        nxt.end,
                        dim="decade",
                        tokens=(i, i + 1),
                    )
                )
            continue
        if nxt is not None and nxt.kind == "word" and (nxt.low in _UNITS or nxt.low in _SCALES):
            continue
        if nxt is not None and nxt.kind == "sym" and nxt.text in ("%",):
            continue
        if (
            nxt is not None
            and nxt.kind == "word"
            and not nxt.text[0].isupper()
            and nxt.low not in STOPWORDS
            and nxt.low not in _FILLER
            and not (prev is not None and prev.low in _YEAR_PREPOSITIONS)
            and _counts(nxt.low)
        ):
            continue  # "2000 requests", "1000 req/min" (but "its 2016 report" is a year)
        if (
            prev is not None
            and prev.kind == "word"
            and prev.is_cap
            and prev.low not in STOPWORDS
            and prev.low not in _MONTHS
            and not prev.initial
        ):
            continue  # "Windows 2000" is an identifier
        used.add(i)
        facts.append(Fact("date", (year_, None, None), t.text, t.start, t.end, tokens=(i,)))


#: Words before a date that make it a bound: "founded before 2000" holds 1998. "until" and
#: "since" are left out: "ran until 2020" and "open since 2010" give the date an end or a start.
_DATE_BOUNDS = {
    ("before",): "lt",
    ("prior", "to"): "lt",
    ("earlier", "than"): "lt",
    ("after",): "gt",
    ("later", "than"): "gt",
    ("by",): "le",
    ("no", "later", "than"): "le",
}
_DATE_BOUNDS_LONGEST_FIRST = sorted(_DATE_BOUNDS.items(), key=lambda kv: -len(kv[0]))
#: "before the end of 2019" is within 2019 or earlier; "after the start of 2019" within it or later.
_END = {"lt": "le", "le": "le", "gt": "gt"}
_START = {"lt": "lt", "le": "lt", "gt": "ge"}
_PERIOD_EDGES = {("the", "end", "of"): _END, ("the", "start", "of"): _START, ("the", "beginning", "of"): _START}


def bound_dates(tokens: list[Token], facts: list[Fact]) -> list[Fact]:
    """``facts`` with each date that a bound word precedes made a bound ("before 2000")."""
    out = []
    for f in facts:
        if f.kind != "date" or f.dim == "decade" or not f.tokens:
            out.append(f)
            continue
        k = min(f.tokens)
        edge: dict[str, str] | None = None
        for edge_words, change in _PERIOD_EDGES.items():
            if tuple(t.low for t in tokens[max(0, k - 3) : k]) == edge_words:
                edge, k = change, k - 3
                break
        bound = None
        for words, b in _DATE_BOUNDS_LONGEST_FIRST:
            if k >= len(words) and tuple(t.low for t in tokens[k - len(words) : k]) == words:
                bound = b
                break
        if bound is None and edge is _END and k > 0 and tokens[k - 1].low in _UNTIL:
            out.append(_last_day(f))  # "until the end of January" is until 31 January
            continue
        if bound is None:
            out.append(f)
            continue
        out.append(replace(f, bound=edge[bound] if edge is not None else bound))
    return out


_UNTIL = frozenset({"until", "till", "through"})
#: What joins the days of one month written before it ("5–7 June", "12 and 13 May").
_DAY_JOINERS = frozenset({"–", "-", "—", ",", "and", "or", "&"})


def _last_day(f: Fact) -> Fact:
    """A month as its last day (a date with a day, or without a month, stays as it is)."""
    y, m, d = f.date_value
    if m is None or d is not None or f.dim:
        return f
    return replace(f, value=(y, m, calendar.monthrange(y or 2001, m)[1]))


#: A word before a clock time that makes it a bound: "after noon" is any time past 12:00.
_TIME_BOUNDS = {"after": "gt", "past": "gt", "before": "lt", "until": "le", "till": "le", "by": "le"} | dict.fromkeys(
    ("about", "around", "approximately", "roughly", "circa"), "approx"
)


_RANGE_WORDS = frozenset("to through thru until till - –".split())
#: Words that name a set of weekdays.
_DAY_SETS = {"weekdays": (1, 2, 3, 4, 5), "weekends": (6, 7), "weekend": (6, 7)}


def _extract_times(tokens: list[Token], used: set[int], facts: list[Fact], text: str) -> None:
    n = len(tokens)
    for i, t in enumerate(tokens):
        if i in used:
            continue
        minutes = None
        end = i
        if t.kind == "time":
            h, m = (int(x) for x in t.text.split(":")[:2])
            minutes = h * 60 + m
            nxt = tokens[i + 1] if i + 1 < n else None
            if t.text.count(":") == 2 and (i == 0 or tokens[i - 1].low != "at") and not (nxt and nxt.kind == "ampm"):
                # "won in 2:00:35", "2. T. Alemu 2:06:40": a race time, hours to seconds
                seconds = h * 3600 + m * 60 + int(t.text.split(":")[2])
                used.add(i)
                facts.append(
                    Fact(
                        "quantity",
                        float(seconds),
                        t.text,
                        t.start,
                        t.end,
                        dim="duration",
                        unit="s",
                        raw=float(seconds),
                        tokens=(i,),
                    )
                )
                continue
            if nxt is not None and (nxt.kind == "ampm" or nxt.low in ("am", "pm")):
                if nxt.low.startswith("p") and h < 12:
                    minutes += 12 * 60
                if nxt.low.startswith("a") and h == 12:
                    minutes -= 12 * 60
                end = i + 1
        elif t.kind == "num" and re.fullmatch(r"\d{1,2}(?:\.[0-5]\d)?", t.text) and i + 1 < n:
            nxt = tokens[i + 1]
            if nxt.kind == "ampm" or (nxt.kind == "word" and nxt.low in ("am", "pm", "a.m", "p.m")):
                hours, _, mins = t.text.partition(".")  # "8.30am", as British text writes it
                h = int(hours)
                if 1 <= h <= 12:
                    minutes = (h % 12) * 60 + int(mins or 0) + (720 if nxt.low.startswith("p") else 0)
                    end = i + 1
                    if (
                        i + 2 < n
                        and tokens[i + 2].text == "."
                        and tokens[i + 2].start == nxt.end
                        and nxt.low in ("a.m", "p.m")
                    ):
                        end = i + 2
        elif t.kind == "word" and t.low in ("noon", "midday", "midnight"):
            minutes = 0 if t.low == "midnight" else 720
        if minutes is not None:
            idx = tuple(range(i, end + 1))
            used.update(idx)
            before = tokens[i - 1].low if i > 0 else ""
            facts.append(
                Fact(
                    "time",
                    minutes % 1440,
                    text[t.start : tokens[end].end],
                    t.start,
                    tokens[end].end,
                    tokens=idx,
                    bound=_TIME_BOUNDS.get(before, "eq"),
                )
            )
