"""Quantity and ordinal facts: numbers in digits or words with their units, scales, currencies,
bounds and rates; and the identifiers ("Python 3.12", "Apollo 11") that look like counts."""

from __future__ import annotations

import re
from dataclasses import replace

from .fact import Fact
from .lexicon import (
    _ABBREVIATED_NOUNS,
    _BOUNDS,
    _CURRENCY_CODES,
    _CURRENCY_SYMBOLS,
    _CURRENCY_WORDS,
    _DIMENSION_ADJECTIVES,
    _FILLER,
    _MONTHS,
    _ORDINALS,
    _SCALES,
    _SHORT_SCALES,
    _TENS,
    _UNITS,
    _UNITS_1,
    _WEEKDAYS,
    COST_WORDS,
    STOPWORDS,
    stem,
)
from .tokens import Token


def parse_number(text: str) -> float | None:
    """``1,000`` → 1000.0, ``3.5`` → 3.5, ``twelve`` → 12, ``twenty-one`` → 21; None otherwise."""
    t = re.sub(r"(?<=\d)[ \u00a0\u202f\u2009](?=\d{3})", ",", text.strip().lower())  # "10 000"
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", t):
        return float(t.replace(",", ""))
    if re.fullmatch(r"\d+(?:\.\d+)?", t):
        return float(t)
    if re.fullmatch(r"\d+,\d{1,2}", t):  # decimal comma
        return float(t.replace(",", "."))
    words = re.split(r"[\s-]+", t)
    total, current, seen = 0.0, 0.0, False
    for w in words:
        if w == "and" and seen:
            continue
        if w in _UNITS_1:
            current += _UNITS_1[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in ("thousand", "million", "billion", "trillion"):
            total += (current or 1) * _SCALES[w]
            current = 0
        elif w in ("a", "an") and not seen:
            current = 1
            continue
        else:
            return None
        seen = True
    return total + current if seen else None


def _is_number_word(low: str) -> bool:
    """ "twelve", "twenty-one", "two-hundred-and-fifty" (a number written in words, hyphenated)."""
    parts = low.split("-")
    return (
        (parts[0] in _UNITS_1 or parts[0] in _TENS)
        and parts[-1] != "and"
        and all(p in _UNITS_1 or p in _TENS or p in ("hundred", "thousand", "and") for p in parts)
    )


def _per_measure(tokens: list[Token], k: int, dim: str) -> tuple[float, str, int] | None:
    """(litres, the unit as shown, its last index) of a volume after "/" or "per" that a mass is
    measured against: "g/cm³", "kg/m3", "mg/ml", "g per litre". None for anything else."""
    if dim != "mass" or k + 1 >= len(tokens) or tokens[k].low not in ("per", "/"):
        return None
    word = tokens[k + 1].low
    cubed = k + 2 < len(tokens) and tokens[k + 2].text in ("3", "³") and tokens[k + 2].start == tokens[k + 1].end
    if word.endswith("3") and word[:-1] in _UNITS:
        word, cubed = word[:-1], True  # "cm3"
    u = _UNITS.get(word)
    if u is None:
        return None
    if u[0] == "volume":
        return u[1], u[2], k + 1
    if u[0] == "length" and cubed:
        return u[1] ** 3 * 1000, f"{u[2]}³", k + 2 if tokens[k + 1].low == word else k + 1
    return None


def _one_of_a_count(tokens: list[Token], i: int) -> bool:
    """ "only one of the five councillors", "one of the 12 jurors": a count of one, where "one of
    the reasons" is no count."""
    after = tokens[i + 2 : i + 4]
    counted = any(t.kind == "num" or _is_number_word(t.low) for t in after)
    return counted or (i > 0 and tokens[i - 1].low in ("only", "just", "exactly"))


def _hyphen_number(head: list[str]) -> float | None:
    """The number of a hyphenated number and noun ("24-month", "two-hundred-and-fifty-pound")."""
    if len(head) < 2 or not _is_number_word("-".join(head[:-1])) or _is_number_word(head[-1]):
        return None
    return parse_number(" ".join(head[:-1]))


#: The bound phrases by their last word, each as its words, in _BOUNDS's order (it runs before
#: every number of every sentence read, so it looks at the phrases that can end here only).
_BOUNDS_BY_LAST: dict[str, list[tuple[list[str], str]]] = {}
for _phrase, _bound in _BOUNDS:
    _BOUNDS_BY_LAST.setdefault(_phrase.split()[-1], []).append((_phrase.split(), _bound))


def _bound_before(tokens: list[Token], i: int, used: set[int]) -> tuple[str, int]:
    """The bound phrase ending right before token i: (bound, first token index)."""
    words: list[tuple[int, str]] = []
    j = i - 1
    while j >= 0 and len(words) < 3 and tokens[j].kind in ("word", "sym") and j not in used:
        if tokens[j].kind == "sym" and tokens[j].text != "~":
            break
        words.insert(0, (j, tokens[j].low))
        j -= 1
    for parts, bound in _BOUNDS_BY_LAST.get(words[-1][1], ()) if words else ():
        if len(parts) <= len(words) and [w for _, w in words[len(words) - len(parts) :]] == parts:
            first = words[len(words) - len(parts)][0]
            if parts == ["over"] and first > 0 and (first - 1 in used or tokens[first - 1].kind == "num"):
                break  # "3,400 km over 21 stages", "$2 billion over five years": across, no bound
            return bound, first
    return "eq", i


#: Video resolutions, which a glued "p" follows without being pence.
_RESOLUTIONS = frozenset("144 240 360 480 576 720 1080 1440 2160 4320".split())


def _money(tokens: list[Token], i: int, end: int) -> bool:
    """Whether "pounds" after number ``i`` is sterling: pence written ("12.99 pounds"), a rate
    of time after it ("50 pounds a month"), "sterling", or a word of paying near it."""
    whole, _, pence = tokens[i].text.partition(".")
    if len(pence) == 2:
        return True
    after = [t.low for t in tokens[end + 1 : end + 3]]
    if after[:1] == ["sterling"]:
        return True
    if len(after) == 2 and after[0] in ("a", "per", "each", "every") and _UNITS.get(after[1], ("",))[0] == "duration":
        return True
    # no word of weight near it, and a word of paying ("pays a 250-pound excess", "a fee of fifty
    # pounds") or a sum in sterling beside it ("£49.99 (just under fifty pounds)")
    around = tokens[max(0, i - 8) : end + 6]
    near = {stem(t.low) for t in around if t.kind == "word"}
    if near & _WEIGHED:
        return False
    return bool(near & _PAID) or any(t.text == "£" for t in around) or _pence(tokens)


def _pence(tokens: list[Token]) -> bool:
    """Whether the text states a sum in pence ("late fees of 25p a day … up to five pounds")."""
    return any(
        t.low == "p" and k > 0 and tokens[k - 1].kind == "num" and tokens[k - 1].end == t.start
        for k, t in enumerate(tokens)
    )


#: Words near "pounds" that make it sterling, and words that keep it a weight (stemmed).
_PAID = COST_WORDS | {stem(w) for w in "excess fine deposit refund salary wage rent bill spend spent worth".split()}
_WEIGHED = frozenset(stem(w) for w in "weigh weighs weighed weight heavy lift load".split())

#: A bound written after its number ("21 or over", "12 and under", "50 or more").
_TRAILING_BOUNDS = {
    **dict.fromkeys("over more above older higher greater upwards".split(), "ge"),
    **dict.fromkeys("under less below fewer younger lower".split(), "le"),
}

#: Words after a number that are no noun it counts ("every one except glycine").
_NOT_COUNTED = frozenset("except excluding including unless apart besides".split())

#: Words between a number and its unit of time that leave it a duration.
_DURATION_ADJECTIVES = frozenset(
    "consecutive full whole straight working business calendar additional extra overtime paid unpaid billable".split()
)


def _unit_at(tokens: list[Token], j: int, glued: bool) -> tuple[str, float, str, int] | None:
    """Unit starting at token j: (dim, factor, canon, last index)."""
    n = len(tokens)
    if j >= n:
        return None
    t = tokens[j]
    low = t.low
    # two-token units
    if j + 1 < n:
        two = f"{low} {tokens[j + 1].low}"
        if two in ("cubic metres", "cubic meters", "cubic metre", "cubic meter"):
            return ("volume", 1e3, "m3", j + 1)
        if two in ("per cent",):
            return ("percent", 1.0, "%", j + 1)
        if two in ("percentage points", "percentage point"):
            return ("percent", 1.0, "%", j + 1)
        # an area as a square of a length: "9.2 million square kilometres", "sq mi", "km²"
        side = _UNITS.get(tokens[j + 1].low) if low in ("square", "sq") else None
        if side is None and tokens[j + 1].text == "²" and tokens[j + 1].start == t.end:
            side = _UNITS.get(low)
            if side is not None:
                return ("area", side[1] ** 2, side[2] + "²", j + 1) if side[0] == "length" else None
        elif side is not None and side[0] == "length":
            return ("area", side[1] ** 2, side[2] + "²", j + 1)
    if t.kind == "sym" and t.text.startswith("°"):
        scale = t.text[1:].upper()
        end = j
        if (
            not scale
            and j + 1 < n
            and tokens[j + 1].low in ("c", "f", "celsius", "fahrenheit")
            and tokens[j + 1].start == t.end
        ):
            scale = tokens[j + 1].low[0].upper()
            end = j + 1
        return ("temperature", 1.0, f"°{scale or '?'}", end)
    if low in ("degree", "degrees", "deg"):
        if j + 1 < n and tokens[j + 1].low in ("celsius", "centigrade", "c", "fahrenheit", "f"):
            return ("temperature", 1.0, "°" + ("F" if tokens[j + 1].low.startswith("f") else "C"), j + 1)
        return ("temperature", 1.0, "°?", j)
    if t.kind == "sym" and t.text == "%":
        return ("percent", 1.0, "%", j)
    if t.kind != "word":
        return None
    # compound "km/h", "m/s"
    if j + 2 < n and tokens[j + 1].text == "/" and tokens[j + 2].kind == "word":
        comp = f"{low}/{tokens[j + 2].low}"
        if comp in _UNITS:
            d, f, c = _UNITS[comp]
            return (d, f, c, j + 2)
    # "miles per hour", "kilometres per hour": a speed, not a length per duration
    if j + 2 < n and tokens[j + 1].low == "per" and tokens[j + 2].low in ("hour", "h", "hr"):
        u = _UNITS.get(low)
        if u is not None and u[2] in ("mi", "km"):
            return _UNITS["mph" if u[2] == "mi" else "km/h"] + (j + 2,)
    if low in _UNITS:
        # single letters only when glued to the number or clearly a unit ("5 m", "30 g")
        if len(low) == 1 and low not in ("m", "g", "h", "s", "l", "%"):
            return None
        # ("200 g arborio rice", "1 l milk": a mass and a volume before the food they measure)
        after_a_duration = j >= 2 and tokens[j - 2].low in _UNITS and _UNITS[tokens[j - 2].low][0] == "duration"
        if (
            low in ("s", "h", "m")
            and not glued
            and not after_a_duration  # "6 min 17 s ahead"
            and j + 1 < n
            and tokens[j + 1].kind == "word"
            and tokens[j + 1].low not in STOPWORDS
            and tokens[j + 1].low not in _DIMENSION_ADJECTIVES
        ):
            return None
        d, f, c = _UNITS[low]
        # MB vs mb vs Mb: bits are rare in prose; treat as bytes.
        return (d, f, c, j)
    return None


#: a fraction's share in percent ("a third of", "two fifths of": the count multiplies the plural)
_FRACTIONS = {
    "half": 50.0,
    "quarter": 25.0,
    "quarters": 25.0,
    "third": 100 / 3,
    "thirds": 100 / 3,
    "fifth": 20.0,
    "fifths": 20.0,
    "tenth": 10.0,
    "tenths": 10.0,
}
_FRACTION_COUNTS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "seven": 7, "nine": 9}
#: words after "a year" / "a month" that make it a point in time ("a year earlier"), not a rate
_TIME_REFERENCE = frozenset({"earlier", "ago", "later", "before", "after", "prior", "previously", "on"})


def _fraction_of_a_unit(tokens: list[Token], i: int) -> tuple[str, float, str, int] | None:
    """(dim, factor, unit, last index) of "half an hour", "half a litre", "a quarter of a mile"
    at ``i``; None otherwise."""
    if tokens[i].low not in ("half", "quarter"):
        return None
    j = i + 1
    if j < len(tokens) and tokens[j].low == "of" and tokens[i].low == "quarter":
        j += 1
    if j + 1 >= len(tokens) or tokens[j].low not in ("a", "an"):
        return None
    unit = _UNITS.get(tokens[j + 1].low)
    if unit is None or unit[0] in ("percent", "currency"):
        return None
    return unit[0], unit[1], unit[2], j + 1


def _fraction_ahead(tokens: list[Token], i: int) -> bool:
    """ "two" in "two thirds of": a fraction's count, not a number of its own."""
    return (
        tokens[i].low in _FRACTION_COUNTS
        and i + 2 < len(tokens)
        and tokens[i + 1].low in _FRACTIONS
        and tokens[i + 2].low == "of"
    )


def _opening_gerund(tokens: list[Token], k: int) -> bool:
    """ "Making 1,200 API calls a day …": a sentence's opening "-ing" word is a verb, so the number
    after it counts something; it is no name numbered like "Apollo 11"."""
    opens = k == 0 or tokens[k - 1].text in (".", "!", "?", ":", ";")
    low = tokens[k].low
    # a consonant before the "-ing" ("mak-ing", "send-ing"): "Boeing 747" stays a name
    return opens and low.endswith("ing") and len(low) > 5 and low[-4] not in "aeiouy"


def extract_hash_identifiers(tokens: list[Token], used: set[int], facts: list[Fact], text: str) -> None:
    """Numbers after a hash: "Order #4471" numbers one order, an identifier ("order 4471", as
    "Order 4471" reads), never a count to compare with other numbers, nor a year ("#1289"); read
    before dates and quantities."""
    for i, t in enumerate(tokens):
        if t.kind != "num" or i == 0 or tokens[i - 1].text != "#" or tokens[i - 1].end != t.start:
            continue
        prev = tokens[i - 2] if i > 1 and (i - 2) not in used else None
        named = prev is not None and prev.is_cap and prev.low not in STOPWORDS
        idx = ((i - 2,) if named else ()) + (i - 1, i)
        start = tokens[idx[0]].start
        used.update(idx)
        ident = f"{prev.low} {t.text}" if named and prev is not None else t.text
        facts.append(Fact("entity", ident, text[start : t.end], start, t.end, dim="identifier", tokens=idx))


#: Adverbs that make a count a rate: "three times daily" is three a day.
_RATE_ADVERBS = {
    "hourly": "hour",
    "daily": "day",
    "nightly": "day",
    "weekly": "week",
    "monthly": "month",
    "yearly": "year",
    "annually": "year",
}
#: Adjectives that make a quantity of a thing a rate: "25 days of annual leave".
_RATE_ADJECTIVES = {"annual": "year", "yearly": "year", "monthly": "month", "weekly": "week", "daily": "day"}
#: Words before the duration of a rate: "per minute", "a year", "each day".
_RATE_WORDS = ("per", "a", "an", "each", "every")


def _past_of_phrase(tokens: list[Token], j: int) -> tuple[int, str | None]:
    """After "of" and up to three words, a rate over a duration: (the index of its "per" / "a",
    None) for "days of paid leave per month"; (the phrase's last index, the duration) when a word
    of the phrase says it, "days of paid annual leave"; else (``j``, None)."""
    if j >= len(tokens) or tokens[j].low != "of":
        return j, None
    for m in range(j + 1, min(j + 5, len(tokens))):
        t = tokens[m]
        if t.low in _RATE_WORDS and m > j + 1:
            # "1.5 days of paid leave for each full month"
            skip = 1 if m + 2 < len(tokens) and tokens[m + 1].low in _DURATION_ADJECTIVES else 0
            u = _UNITS.get(tokens[m + 1 + skip].low) if m + 1 + skip < len(tokens) else None
            # "days of paid leave per month", "0.1 g of Meloxivet per kilogram"
            per_unit = u is not None and (u[0] == "duration" or t.low == "per")
            return (m, None) if per_unit else (j, None)
        glued_word = m + 1 < len(tokens) and tokens[m + 1].kind == "word" and tokens[m + 1].start == t.end
        if t.kind == "num" and glued_word:
            continue  # "100 GB of 5G data per month"
        if t.kind != "word" or _is_number_word(t.low):
            return j, None  # "0.5 g of amoxicillin three times a day": the rate is the count's
        if t.low in _RATE_ADJECTIVES:
            end = m
            while end + 1 < len(tokens) and end + 1 < j + 5 and tokens[end + 1].kind == "word":
                if tokens[end + 1].low in STOPWORDS:
                    break
                end += 1
            return end, _RATE_ADJECTIVES[t.low]
    return j, None


def _score_at(tokens: list[Token], i: int) -> bool:
    """Whether number ``i`` opens a score or a vote written with a dash ("beat Chelsea 3-1"),
    which is no identifier of the name before it."""
    return (
        i + 2 < len(tokens)
        and tokens[i + 1].text in ("-", "–")
        and tokens[i + 2].kind == "num"
        and tokens[i].end == tokens[i + 1].start
        and tokens[i + 1].end == tokens[i + 2].start
    )


#: Words of a game or a vote, without which "10-12" is a range ("pages 10-12"), not a score.
_MATCH_WORDS = frozenset(
    "beat beats beating won win wins winning lost lose loses losing draw drew drawn level tied final score "
    "scored scoring victory defeat defeated penalties match game finished vote votes voted goals".split()
)


def _a_match(tokens: list[Token], i: int) -> bool:
    """A score of a game or a vote, not a win–loss record ("a 12–5 record"), which sources spell
    out as counts ("11 wins and 6 losses")."""
    if i + 3 < len(tokens) and tokens[i + 3].low == "record":
        return False
    return any(t.low in _MATCH_WORDS for t in tokens)


def _signed(tokens: list[Token], i: int) -> bool:
    """Whether a minus sign stands right before number ``i`` ("-5 °C", "(−3%)"), not a hyphen
    between two things ("2019-2020", "pages 10-12")."""
    if i == 0 or tokens[i - 1].text not in ("-", "−") or tokens[i - 1].end != tokens[i].start:
        return False
    before = tokens[i - 2] if i >= 2 else None
    return before is None or before.end < tokens[i - 1].start or before.kind == "sym"


#: The ``per`` of a duration after "every": a time between repeats, compared only with another.
INTERVAL = "interval"


def _around_the_clock(tokens: list[Token], i: int) -> int:
    """The index after "24/7" (or "24/7/365") written from token ``i``; 0 when it is not there."""
    texts = [t.text for t in tokens[i : i + 5]]
    if texts[:3] != ["24", "/", "7"] or any(tokens[k].start != tokens[k - 1].end for k in range(i + 1, i + 3)):
        return 0
    if texts[3:5] == ["/", "365"] and tokens[i + 4].start == tokens[i + 3].end == tokens[i + 2].end + 1:
        return i + 5
    return i + 3


def _one_in(tokens: list[Token], i: int) -> tuple[float, int] | None:
    """(share in percent, last index) of "one in four", "1 in 10", "three out of five" at ``i``,
    before what they count ("one in four adults"); None otherwise ("a 2-in-1 laptop", "1 in 2024")."""
    j = i + 2 if i + 1 < len(tokens) and tokens[i + 1].low == "in" else i + 3
    if j - i == 3 and [t.low for t in tokens[i + 1 : i + 3]] != ["out", "of"]:
        return None
    if j + 1 >= len(tokens) or tokens[j + 1].kind != "word" or tokens[j + 1].low in _UNITS:
        return None
    part, whole = (_count_word(tokens[k]) for k in (i, j))
    if part is None or whole is None or not 0 < part < whole <= 1000 or tokens[i + 1].start == tokens[i].end:
        return None
    return part / whole * 100, j


def _count_word(t: Token) -> float | None:
    """A whole number written in digits or words ("4", "four"), else None."""
    if t.kind == "num" and t.text.isdigit():
        return float(t.text)
    return parse_number(t.low) if t.kind == "word" and _is_number_word(t.low) else None


def _extract_quantities(tokens: list[Token], used: set[int], facts: list[Fact], text: str) -> None:
    n = len(tokens)
    i = 0
    while i < n:
        t = tokens[i]
        if i in used:
            i += 1
            continue
        share_of = _one_in(tokens, i)
        if share_of is not None:  # "one in four adults" is 25 % of them
            share, last = share_of
            bound, b0 = _bound_before(tokens, i, used)
            if bound == "eq" and share != round(share, 1):
                bound = "approx"  # "two in three" is "about 67%", as "two thirds" is
            idx = tuple(range(b0, last + 1))
            used.update(idx)
            said = text[tokens[b0].start : tokens[last].end]
            facts.append(
                Fact(
                    "quantity",
                    share,
                    said,
                    tokens[b0].start,
                    tokens[last].end,
                    dim="percent",
                    unit="%",
                    bound=bound,
                    raw=share,
                    tokens=idx,
                )
            )
            i = last + 1
            continue
        value: float | None = None
        end = i
        noun_from_hyphen: str | None = None
        if t.kind == "num":
            if re.fullmatch(r"\d+\.\d+\.\d+", t.text):
                i += 1
                continue  # version numbers are handled as identifiers
            if _score_at(tokens, i) and tokens[i].text == tokens[i + 2].text and _a_match(tokens, i):
                # a level score ("level at 2–2 after extra time", "finished 3–3") is one value, not
                # two counts that another score's "2" would match; a score with a winner stays two
                # counts, whose order the comparison checks read ("beat Chelsea 1-3" is reversed)
                a = b = tokens[i].text
                score = tuple(range(i, i + 3))
                used.update(score)
                said = text[t.start : tokens[i + 2].end]
                facts.append(
                    Fact("entity", f"score {a}-{b}", said, t.start, tokens[i + 2].end, dim="identifier", tokens=score)
                )
                i += 3
                continue
            always = _around_the_clock(tokens, i)
            if always:  # "24/7", "24/7/365": a way of saying "always", not two numbers; a fact
                # still, which a source that never says it leaves missing ("24/7 priority support")
                idx = tuple(range(i, always))
                used.update(idx)
                said = text[t.start : tokens[always - 1].end]
                facts.append(Fact("entity", said, said, t.start, tokens[always - 1].end, dim="identifier", tokens=idx))
                i = always
                continue
            value = parse_number(t.text)
            if value is not None and _signed(tokens, i):
                value = -value
        elif t.kind == "word":
            low = t.low
            head = low.split("-")
            fifths = low in ("fifth", "fifths", "tenth", "tenths") and i > 0 and tokens[i - 1].low in _FRACTION_COUNTS
            measure = _fraction_of_a_unit(tokens, i)
            if measure is not None:  # "half an hour", "a quarter of a minute": a measure, not a share
                dim, factor, unit, last = measure
                start_i = i - 1 if i > 0 and tokens[i - 1].low in ("a", "one") else i
                bound, b0 = _bound_before(tokens, start_i, used)
                idx = tuple(range(b0, last + 1))
                used.update(idx)
                share = _FRACTIONS[low] / 100
                facts.append(
                    Fact(
                        "quantity",
                        share * factor,
                        text[tokens[b0].start : tokens[last].end],
                        tokens[b0].start,
                        tokens[last].end,
                        dim=dim,
                        unit=unit,
                        bound=bound,
                        raw=share,
                        tokens=idx,
                    )
                )
                i = last + 1
                continue
            if (
                (low in ("half", "quarter", "third", "thirds", "quarters") or fifths)
                and i + 1 < n
                and tokens[i + 1].low == "of"
            ):
                frac = _FRACTIONS[low]
                start_i = i
                plural = low in ("thirds", "quarters", "fifths", "tenths")
                if plural and i > 0 and tokens[i - 1].low in _FRACTION_COUNTS:
                    frac *= _FRACTION_COUNTS[tokens[i - 1].low]
                    start_i = i - 1
                elif i > 0 and tokens[i - 1].low in ("a", "one"):
                    start_i = i - 1
                bound, b0 = _bound_before(tokens, start_i, used)
                idx = tuple(range(b0, i + 1))
                used.update(idx)
                facts.append(
                    Fact(
                        "quantity",
                        frac,
                        text[tokens[b0].start : t.end],
                        tokens[b0].start,
                        t.end,
                        dim="percent",
                        unit="%",
                        bound=bound if bound != "eq" else ("approx" if low in ("third", "thirds") else "eq"),
                        raw=frac,
                        tokens=idx,
                    )
                )
                i += 1
                continue
            if low in ("dozen",):
                value = 12.0
            elif (
                low in ("once", "twice")
                and i + 2 < n
                and tokens[i + 1].low in ("a", "an", "per", "every")
                and tokens[i + 2].low in _UNITS
                and _UNITS[tokens[i + 2].low][0] == "duration"
            ) or (low in ("once", "twice") and i + 1 < n and tokens[i + 1].low in _RATE_ADVERBS):  # "once daily"
                value = 1.0 if low == "once" else 2.0
            elif _fraction_ahead(tokens, i):
                pass  # "two thirds of": the fraction, read at "thirds"
            elif _is_number_word(low) or _hyphen_number(head) is not None:
                if _is_number_word(low):
                    # join "twenty one", "two hundred", "one thousand", "five hundred and fifty"
                    j = i
                    words = [low]
                    while j + 1 < n and tokens[j + 1].kind == "word":
                        follow = tokens[j + 1].low
                        if _is_number_word(follow) or follow in _SCALES:
                            j += 1
                        elif (
                            follow == "and"
                            and j + 2 < n
                            and _is_number_word(tokens[j + 2].low)
                            and words[-1] in ("hundred", "thousand")
                        ):
                            j += 2
                            words.append("and")
                        else:
                            break
                        words.append(tokens[j].low)
                    value = parse_number(" ".join(words))
                    end = j
                else:
                    value = _hyphen_number(head)
                    noun_from_hyphen = head[-1]
                if (
                    low == "one"
                    and i + 1 < n
                    and tokens[i + 1].low in ("of", "another")
                    and not _one_of_a_count(tokens, i)
                ):
                    value = None
            elif low in ("a", "an") and i + 1 < n and tokens[i + 1].low in ("dozen", "hundred", "thousand", "million"):
                value = parse_number(f"one {tokens[i + 1].low}") if tokens[i + 1].low != "dozen" else 12.0
                end = i + 1
            elif low == "half" and i + 2 < n and tokens[i + 1].low == "a" and tokens[i + 2].low in ("dozen", "million"):
                value = 6.0 if tokens[i + 2].low == "dozen" else 5e5  # "half a million visitors"
                end = i + 2
        if value is None:
            i += 1
            continue

        bound, b0 = _bound_before(tokens, i, used)
        start_i = b0
        # currency prefix: "$20", "US$ 5", "EUR 10"
        currency = None
        if i > 0 and tokens[i - 1].kind in ("sym", "word"):
            p = tokens[i - 1]
            if p.text in _CURRENCY_SYMBOLS:
                currency = _CURRENCY_SYMBOLS[p.text]
            elif p.low in _CURRENCY_CODES:
                currency = _CURRENCY_CODES[p.low]
            if currency:
                start_i = min(start_i, i - 1)
                bound, b0 = _bound_before(tokens, i - 1, used)
                start_i = min(b0, i - 1)
        raw = value
        # scale words: "1.5 million", "$2.3bn", "3k"
        j = end + 1
        if (
            j < n
            and tokens[j].kind == "word"
            and (
                tokens[j].low in _SCALES or tokens[j].low in _SHORT_SCALES or (currency and tokens[j].low in ("m", "b"))
            )
        ):
            w = tokens[j].low
            scale = _SCALES.get(w) or _SHORT_SCALES.get(w) or (1e6 if w == "m" else 1e9)
            if w in _SHORT_SCALES or w in ("m", "b"):
                ok = tokens[j].start == tokens[j - 1].end or currency is not None
            else:
                ok = True
            if ok:
                value *= scale
                raw = value
                end = j
                j += 1
        # unit
        dim, unit, factor = "count", "", 1.0
        nouns: list[str] = []
        if noun_from_hyphen:
            u = _UNITS.get(noun_from_hyphen)
            if noun_from_hyphen == "pound" and _money(tokens, i, i):
                currency = "GBP"  # "a two-hundred-and-fifty-pound excess"
            elif u:
                dim, factor, unit = u
            else:
                nouns = [stem(noun_from_hyphen)]
        elif currency is None:
            k = j
            if k < n and tokens[k].text == "-" and tokens[k].start == tokens[k - 1].end:
                k += 1  # "24-month"
            if (
                k + 3 < n
                and tokens[k].text == "("
                and tokens[k + 2].text == ")"
                and tokens[k + 1].kind == "num"
                and parse_number(tokens[k + 1].text) == value
            ):
                k += 3  # "twenty-four (24) months", as contracts write a number twice
            glued = k < n and tokens[k].start == tokens[k - 1].end
            ua = _unit_at(tokens, k, glued)
            if ua is None and k + 1 < n and tokens[k].low in _DURATION_ADJECTIVES:
                ua = _unit_at(tokens, k + 1, False)  # "two consecutive weeks", "10 working days"
                ua = ua if ua is not None and ua[0] == "duration" else None
            if ua is not None:
                dim, factor, unit, end = ua
                j = end + 1
                if unit == "lb" and tokens[end].low.startswith("pound") and _money(tokens, i, end):
                    currency = "GBP"  # "12.99 pounds a month": sterling, not a weight
            elif k < n and glued and tokens[k].low == "p" and tokens[i].text not in _RESOLUTIONS:
                currency = "GBP_PENCE"  # "28.4p/kWh", "53p a day" (not "1080p")
                end = k
                j = k + 1
            elif k < n and tokens[k].kind == "word" and tokens[k].low in _CURRENCY_WORDS:
                currency = _CURRENCY_WORDS[tokens[k].low]
                end = k
                j = k + 1
                cents = parse_number(tokens[j].low) if j < n and _is_number_word(tokens[j].low) else None
                if cents is not None and cents < 100 and value == int(value) and tokens[i].kind == "word":
                    value += cents / 100  # "seventeen euros ninety-nine" is €17.99
                    raw = value
                    end = j
                    j += 1
            elif k < n and tokens[k].kind == "word" and tokens[k].low in _CURRENCY_CODES:
                currency = _CURRENCY_CODES[tokens[k].low]
                end = k
                j = k + 1
        if currency:
            if currency in ("USD_CENT", "GBP_PENCE"):  # "28.4p" is £0.284, and is shown so
                currency, value = currency[:3], value / 100
                raw = value
            dim, unit, factor = f"currency:{currency}", currency, 1.0
        if dim == "temperature":
            if unit == "°F":
                value = (value - 32) * 5 / 9
            elif unit == "K":
                value = value - 273.15
        else:
            value = value * factor
        # "1.2 km long", "21 days apart", "5 years old": the adjective belongs to the quantity
        if (
            dim not in ("count", "percent")
            and not dim.startswith("currency")
            and j < n
            and tokens[j].low in _DIMENSION_ADJECTIVES
        ):
            end = j
            j += 1
        # count nouns: up to two content words after the number ("15 water stations")
        if dim == "count" and not nouns:
            k = j
            if k + 1 < n and tokens[k].text == "-" and tokens[k].start == tokens[k - 1].end:
                k += 1  # "the 23-player roster"
            while k < n and len(nouns) < 2:
                tk = tokens[k]
                if (
                    tk.kind != "word"
                    or tk.low in STOPWORDS
                    or tk.low in _FILLER
                    or k in used
                    or _is_number_word(tk.low)
                    or tk.low in _UNITS
                    or tk.low in _ORDINALS
                    or tk.low in _SCALES
                    or tk.low in _RATE_ADVERBS
                    or tk.low in _NOT_COUNTED
                    or (tk.text[0].isupper() and nouns)
                ):
                    break
                if tk.low in _UNITS and _UNITS[tk.low][0] == "duration" and nouns:
                    break
                w = _ABBREVIATED_NOUNS.get(tk.low, tk.low)
                nouns.append(stem(w))
                end = k
                k += 1
            if k + 1 < n and tokens[k].text == "/" and tokens[k + 1].kind == "word" and not nouns:
                pass
            j = end + 1
        # rate: "per minute", "/min", "a year", "each day"
        per = ""
        period = ""  # the rate's duration as written ("month"), for the reasons (Fact.describe)
        # "1.5 days of paid leave per month", "25 days of annual leave" (not "5% of annual revenue")
        # ("2,700 kWh of electricity per year" too; not "5% of annual revenue per year")
        k, adjective = _past_of_phrase(tokens, j) if dim != "percent" else (j, None)
        by_adjective = _UNITS.get(adjective) if adjective and dim == "duration" else None
        if k + 2 < n and tokens[k].low == "for" and tokens[k + 1].low in ("each", "every") and not by_adjective:
            k += 1  # "€10 for each month"
        if by_adjective is not None and value is not None:  # "25 days of paid annual leave"
            value = value / by_adjective[1]
            per, period = "duration", by_adjective[2]
            end = k
        # allow "of X" or one more word before "per": "1,000 requests per minute", "7 million visitors a year"
        elif k + 1 < n and (tokens[k].low in _RATE_WORDS or tokens[k].text == "/"):
            if k + 2 < n and tokens[k + 1].low in _DURATION_ADJECTIVES and tokens[k + 2].low in _UNITS:
                k += 1  # "each full month", "every calendar month"
            nxt = tokens[k + 1]
            u = _UNITS.get(nxt.low)
            # "€950m a year earlier" is a time reference, not a rate
            later = tokens[k + 2].low if k + 2 < n else ""
            if later == "on" and k + 3 < n and tokens[k + 3].low in ("a", "an", "the", "its", "their", "this", "each"):
                later = ""  # "£12.99 a month on a 24-month contract": a rate, not "a year on"
            if u is not None and u[0] == "duration" and later not in _TIME_REFERENCE:
                value = value / u[1]
                per, period = "duration", u[2]
                end = k + 1
            elif (per_volume := _per_measure(tokens, k, dim)) is not None:
                factor_per, shown, end = per_volume  # "13.5 g/cm³" is a density, not grams per "cm"
                value, per, unit = value / factor_per, "volume", f"{unit}/{shown}"
            elif tokens[k].low in ("per", "/") and nxt.kind == "word" and nxt.low not in STOPWORDS:
                # "per kilogram" is "per kg": a unit by its one name, another noun by its stem
                per = _UNITS[nxt.low][2] if nxt.low in _UNITS else stem(nxt.low)
                end = k + 1
        elif k < n and tokens[k].low in _RATE_ADVERBS:  # "two times daily" = "twice a day"
            u = _UNITS.get(_RATE_ADVERBS[tokens[k].low])
            if u is not None and u[0] == "duration":
                value = value / u[1]
                per, period = "duration", u[2]
                end = k
        if dim == "duration" and not per and start_i > 0 and tokens[start_i - 1].low == "every":
            per = INTERVAL  # "runs every two hours": how often, not how long ("takes 2 hours")
        if dim == "count" and tokens[i].kind == "num" and i > 0:
            prev = tokens[i - 1]
            # identifiers: "Apollo 11", "Python 3.12", "Room 3B", "Windows 11"
            if (
                prev.kind == "word"
                and prev.is_cap
                and prev.low not in STOPWORDS
                and prev.low not in _MONTHS
                and prev.low not in _WEEKDAYS
                and (i - 1) not in used
                and bound == "eq"
                and prev.low not in ("chapter",)
                and not prev.text.lower().endswith(("'s", "’s"))  # "Brazil's 2023/24 harvest"
                and not currency
                and not _score_at(tokens, i)
                and not _opening_gerund(tokens, i - 1)
            ):
                tail = ""
                e = i
                if i + 1 < n and tokens[i + 1].kind == "word" and tokens[i + 1].start == t.end:
                    tail = tokens[i + 1].low
                    e = i + 1
                ident = f"{prev.low} {t.text.lower()}{tail}"
                idx = (i - 1, i) + ((e,) if e != i else ())
                used.update(idx)
                facts.append(
                    Fact(
                        "entity",
                        ident,
                        text[prev.start : tokens[e].end],
                        prev.start,
                        tokens[e].end,
                        dim="identifier",
                        tokens=idx,
                    )
                )
                i = e + 1
                continue
        if bound == "eq" and end + 2 < n and tokens[end + 1].low in ("or", "and"):
            trailing = _TRAILING_BOUNDS.get(tokens[end + 2].low)
            if trailing is not None:  # "aged 21 or over", "12 and under", "50 or more"
                bound, end = trailing, end + 2
                after = tokens[end + 1] if end + 1 < n else None
                if dim == "count" and not nouns and after is not None and after.kind == "word":
                    plural = after.low in ("people", "children") or (after.low.endswith("s") and len(after.low) > 3)
                    if plural and after.low not in STOPWORDS and after.low not in _UNITS:
                        nouns, end = [stem(after.low)], end + 1  # "10 or more people"
        idx = tuple(range(start_i, end + 1))
        used.update(idx)
        # "one charge", "one of": a count of one written as a word is often just an article
        weak = dim == "count" and raw == 1 and tokens[i].kind == "word" and bound == "eq" and not per
        weak = weak and not (tokens[i].low == "one" and i + 1 < n and tokens[i + 1].low == "of")
        facts.append(
            Fact(
                "quantity",
                float(value),
                text[tokens[start_i].start : tokens[end].end],
                tokens[start_i].start,
                tokens[end].end,
                dim=dim,
                unit=unit,
                noun=tuple(nouns),
                per=per,
                period=period,
                bound=bound,
                raw=float(raw),
                weak=weak,
                tokens=idx,
            )
        )
        i = end + 1

    # version-like identifiers standing alone ("3.12.0")
    for i, t in enumerate(tokens):
        if i not in used and t.kind == "num" and re.fullmatch(r"\d+\.\d+\.\d+", t.text):
            before = tokens[i - 1] if i > 0 else None
            name = before.low if before is not None and before.is_cap else ""
            s = before.start if before is not None and name else t.start
            idx = ((i - 1,) if name else ()) + (i,)
            used.update(idx)
            facts.append(
                Fact("entity", f"{name} {t.text}".strip(), text[s : t.end], s, t.end, dim="identifier", tokens=idx)
            )


def _extract_ordinals(tokens: list[Token], used: set[int], facts: list[Fact], words: bool = True) -> None:
    """Ordinals ("third", "19th"). Digit ordinals are read before quantities (``words=False``), so
    that "19th century" is not a count of 19 "th"; word ordinals after them, so that "a third of"
    stays a share."""
    n = len(tokens)
    for i, t in enumerate(tokens):
        if i in used:
            continue
        value = None
        if words and t.kind == "word" and t.low in _ORDINALS:
            value = _ORDINALS[t.low]
            if t.low == "second" and i > 0 and tokens[i - 1].kind == "num":
                continue
        elif (
            t.kind == "num"
            and re.fullmatch(r"\d+", t.text)
            and i + 1 < n
            and tokens[i + 1].low.split("-")[0] in ("st", "nd", "rd", "th")  # "19th", "19th-century"
            and tokens[i + 1].start == t.end
        ):
            value = int(t.text)
        if value is not None:
            used.add(i)
            facts.append(Fact("ordinal", value, t.text, t.start, t.end, weak=True, tokens=(i,)))


def merge_compound_durations(facts: list[Fact], text: str) -> list[Fact]:
    """ "12 hours and 30 minutes" is one duration (12.5 hours), not two: join a duration with the
    smaller one right after it (``facts`` sorted by position)."""
    out: list[Fact] = []
    for f in facts:
        prev = out[-1] if out else None
        big = _UNITS.get(prev.unit) if prev is not None else None
        small = _UNITS.get(f.unit)
        if (
            prev is not None
            and big is not None
            and small is not None
            and prev.kind == f.kind == "quantity"
            and prev.dim == f.dim == "duration"
            and not prev.per
            and not f.per
            and f.bound == "eq"
            and text[prev.end : f.start].strip(" ,").lower() in ("", "and")
            and big[1] > small[1]
            # "between 2 hours and 30 minutes" is a range, not 2.5 hours
            and not text[: prev.start].rstrip().lower().endswith(("between", "from"))
        ):
            out[-1] = replace(
                prev,
                value=prev.num_value + f.num_value,
                text=text[prev.start : f.end],
                end=f.end,
                raw=(prev.num_value + f.num_value) / big[1],
                tokens=prev.tokens + f.tokens,
            )
            continue
        out.append(f)
    return out


#: Words between the two ends of a range of amounts written with one unit ("10–15 km", "9 to 12
#: months", "2 or 3 days"); "and" only after "between" ("between 9 and 12 months").
_RANGE_JOINERS = frozenset("to - – — through or".split())


def _written(f: Fact, tokens: list[Token]) -> float | None:
    """The number of ``f`` as its digits or words give it ("15" of "15 million", "30" of "30p")."""
    first = next((tokens[k] for k in f.tokens if tokens[k].kind == "num"), None)
    return parse_number(first.text) if first is not None else f.raw


def _seconds(f: Fact) -> float:
    return _UNITS[f.period][1] if f.per == "duration" and f.period in _UNITS else 1.0


def _bare(f: Fact) -> bool:
    return f.dim == "count" and not f.noun


def share_range_units(facts: list[Fact], tokens: list[Token]) -> list[Fact]:
    """The two ends of a range share the unit and the rate written once (docs/verifier.md, "What
    it can detect"): "10–15 km" is 10 km to 15 km, "€10–15 a month" €10 a month to €15 a month,
    "between 9 and 12 months" 9 months to 12 months, "10 to 15 million" ten million to fifteen.
    Read alone, the bare end is a count, which the claim's "12 km" or "10 months" then
    contradicts or misses (``facts`` sorted by position)."""
    out = list(facts)
    amounts = [k for k, f in enumerate(out) if f.kind == "quantity" and f.tokens and not f.implied]
    for k1, k2 in zip(amounts, amounts[1:]):
        a, b = out[k1], out[k2]
        between = [t.low for t in tokens[max(a.tokens) + 1 : min(b.tokens)]]
        after_between = min(a.tokens) > 0 and tokens[min(a.tokens) - 1].low == "between"
        if not (
            between and len(between) == 1 and (between[0] in _RANGE_JOINERS or (between[0] == "and" and after_between))
        ):
            continue
        if a.bound not in ("eq", "approx") or b.bound not in ("eq", "approx"):
            continue
        if between[0] in ("-", "–", "—") and (_written(a, tokens) or 0) >= (_written(b, tokens) or 0):
            continue  # "a 12–5 record", "won 3-1": a score runs either way, a range runs up
        unit_end = b if _bare(a) else a
        if not _bare(a) and not _bare(b) and (a.dim != b.dim or a.unit != b.unit or a.noun != b.noun):
            continue  # "5 km to 10 minutes": two things, not one range
        if a.per and b.per and (a.per, a.period) != (b.per, b.period):
            continue
        rate = a if a.per else b
        if rate.per == "duration" and not rate.period:
            continue
        ends: list[Fact] = []
        for f in (a, b):
            written, base = _written(f, tokens), _written(unit_end, tokens)
            if not written or not base or unit_end.raw is None:
                ends = []
                break
            scale = unit_end.num_value * _seconds(unit_end) / base  # the unit's worth of one written
            rawscale = unit_end.raw / base
            if f is not unit_end and not _bare(f):
                scale, rawscale = f.num_value * _seconds(f) / written, (f.raw or written) / written
            ends.append(
                replace(
                    f,
                    value=written * scale / (_UNITS[rate.period][1] if rate.per == "duration" else 1.0),
                    raw=written * rawscale,
                    dim=unit_end.dim,
                    unit=unit_end.unit,
                    noun=unit_end.noun,
                    per=rate.per,
                    period=rate.period,
                )
            )
        if ends:
            out[k1], out[k2] = ends
    return out


#: What may stand between the values of a list ("8, 12 and 16 weeks", "50, 52 or 54 cm").
LIST_JOINS = frozenset({",", "and", "or"})


def listed(a: Fact, b: Fact, tokens: list[Token]) -> bool:
    """Whether ``b`` follows ``a`` in a list: a comma, "and" or "or" between them, nothing else."""
    between = tokens[max(a.tokens) + 1 : min(b.tokens)]
    return 0 < len(between) <= 2 and all(t.low in LIST_JOINS for t in between)


def share_list_units(facts: list[Fact], tokens: list[Token]) -> list[Fact]:
    """The values of a list share the unit written after the last: "at 8, 12 and 16 weeks" is 8
    weeks, 12 weeks and 16 weeks (read alone, "8" and "12" are counts, and the claim's "4 weeks
    apart" finds one list value of its unit only). ``facts`` sorted by position."""
    out = list(facts)
    amounts = [k for k, f in enumerate(out) if f.kind == "quantity" and f.tokens and not f.implied]
    run: list[int] = []
    for k in amounts + [-1]:
        f = out[k] if k >= 0 else None
        if f is not None and run and listed(out[run[-1]], f, tokens):
            run.append(k)
            continue
        if len(run) >= 2:
            *items, last_k = run
            last = out[last_k]
            base = _written(last, tokens)
            bare = all(_bare(out[i]) and out[i].bound == "eq" and not out[i].per for i in items)
            if bare and not _bare(last) and not last.per and base and last.raw is not None:
                for i in items:
                    written = _written(out[i], tokens)
                    if written:
                        out[i] = replace(
                            out[i],
                            value=written * last.num_value / base,
                            raw=written * last.raw / base,
                            dim=last.dim,
                            unit=last.unit,
                            noun=last.noun,
                        )
        run = [k] if f is not None else []
    return out
