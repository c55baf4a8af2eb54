"""Fact extraction and alignment (pure Python, no model).

``analyse(text)`` turns a sentence into an :class:`Analysis`: its *facts* and the
signals the verifier aligns between a claim and a source sentence.

Facts (:class:`Fact`):

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

Signals besides facts: negation polarity (``not``, ``never``, ``no``, ``without`` and
negative-state words such as ``closed``, ``missing``, ``banned``), antonymic
direction words (increase/decrease, more/less, before/after, faster/slower, north/south,
older/younger ...), quantifiers (all/every/always vs some/most/sometimes) and the
claim's remaining content words, used to judge whether a source sentence talks about
*the same thing* (coverage).

``align(claim, span, doc)`` compares a claim with one source sentence (``span``) and the
source text around it (``doc``; the verifier passes all sources of the call) and returns
conflicts, missing facts and coverage. Conflicts are only looked for in the span; a claim
fact counts as present when any fact of ``doc`` has the same value.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

__all__ = [
    "Fact",
    "Token",
    "Analysis",
    "Conflict",
    "Alignment",
    "analyse",
    "refers_back",
    "align",
    "proper_vocabulary",
    "parse_number",
    "stem",
    "words_match",
]

# --------------------------------------------------------------------------- lexicon

STOPWORDS = frozenset("""
a an the this that these those there here it its it's they them their theirs he him his she her hers
we us our ours you your yours i me my mine one's who whom whose which what when where why how
is are was were be been being am do does did done doing have has had having will would shall should
can could may might must ought to of in on at by for from with into onto upon over under about as
than then so such too very just also only even still yet already both either each and or but if
because while although though whereas unless until till since after before during per via
within without through throughout across along among amongst between behind beyond toward towards
up down out off again further once any some many much more most other another own same few less
least lot lots several all every whole s t don't doesn't just like get gets got getting
been make makes made use used using new now one ones around near also well may might
""".split()) | {"its", "it’s", "'s"}

# Words that never count as content (grammar, discourse, hedges)
_FILLER = frozenset("""
however therefore thus hence indeed really actually usually generally typically often sometimes
always never also still overall currently total approximately roughly nearly almost about around
include includes including included e.g i.e etc
""".split())

_NEGATIONS = frozenset("""
not no never none nothing nobody nowhere neither nor without cannot can't won't don't doesn't didn't
isn't aren't wasn't weren't hasn't haven't hadn't shouldn't mustn't wouldn't couldn't mightn't needn't
ain't n't
""".split())

# Words that state the negative of a condition: they carry negative polarity, so
# "closed" vs "open", "missing" vs "not found" line up as a polarity (dis)agreement.
_NEGATIVE_STATES = frozenset("""
closed missing absent lack lacks lacking lacked unavailable unable fail fails failed failing
prohibited forbidden banned disallowed disabled excluded denied refused rejected exempt
impossible illegal unsupported unsafe invalid incorrect false
""".split())
_POSITIVE_STATES = frozenset("""
open opened available allowed permitted enabled included accepted supported possible legal
safe valid correct true allows permits
""".split())

# Antonymic direction groups: word -> (group, side)
_DIRECTION_WORDS: dict[str, tuple[str, int]] = {}


def _dir(group: str, side: int, words: str) -> None:
    for w in words.split():
        _DIRECTION_WORDS[w] = (group, side)


_dir("magnitude", +1, """increase increases increased increasing rise rises rose risen rising grow grows grew
grown growing growth gain gains gained climb climbs climbed jump jumped surge surged raise raises raised
boost boosts boosted more higher highest greater greatest larger largest bigger biggest above exceed
exceeds exceeded maximum""")
_dir("magnitude", -1, """decrease decreases decreased decreasing fall falls fell fallen falling drop drops
dropped dropping decline declines declined declining shrink shrinks shrank shrunk reduce reduces reduced
reducing reduction lower lowers lowered lowest less fewer fewest smaller smallest below minimum least
plunge plunged dip dipped cut cuts""")
_dir("speed", +1, "fast faster fastest quick quicker quickest rapid rapidly quickly")
_dir("speed", -1, "slow slower slowest slowly")
_dir("order", +1, "after later latest afterwards subsequently")
_dir("order", -1, "before earlier earliest prior previously beforehand")
_dir("age", +1, "older oldest elderly")
_dir("age", -1, "younger youngest young")
_dir("cost", +1, "expensive costlier pricier")
_dir("cost", -1, "cheap cheaper cheapest inexpensive")
_dir("heat", +1, "hot hotter hottest warm warmer warmest")
_dir("heat", -1, "cold colder coldest cool cooler coolest")
_dir("ns", +1, "north northern northward northwards northbound")
_dir("ns", -1, "south southern southward southwards southbound")
_dir("ew", +1, "east eastern eastward eastwards eastbound")
_dir("ew", -1, "west western westward westwards westbound")
_dir("outcome", +1, "win wins won winning victory success succeeded succeeds")
_dir("outcome", -1, "lose loses lost losing defeat defeated failure")
_dir("scope", +1, "internal inside indoor indoors domestic")
_dir("scope", -1, "external outside outdoor outdoors foreign international")
_dir("trade", +1, "import imports imported")
_dir("trade", -1, "export exports exported")
_dir("sync", +1, "synchronous synchronously sync")
_dir("sync", -1, "asynchronous asynchronously async")
_dir("need", +1, "required mandatory compulsory obligatory")
_dir("need", -1, "optional voluntary")
_dir("access", +1, "public")
_dir("access", -1, "private")
_dir("connect", +1, "online")
_dir("connect", -1, "offline")

_NON_NEGATING = {("not", "only"), ("no", "doubt"), ("no", "matter"), ("not", "just"),
                 ("never", "mind"), ("no", "sooner")}

_UNIVERSAL = frozenset("all every each always everyone everybody everything everywhere entire".split())
_PARTIAL = frozenset("""some most many several few sometimes often usually occasionally rarely seldom
partly partially certain majority minority""".split())

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
_WEEKDAYS = {
    "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6, "sunday": 7,
    "mondays": 1, "tuesdays": 2, "wednesdays": 3, "thursdays": 4, "fridays": 5, "saturdays": 6, "sundays": 7,
}

_UNITS_1 = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SHORT_SCALES = {"k": 1e3, "mn": 1e6, "bn": 1e9}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20,
    "hundredth": 100, "last": -1,
}

# unit surface (lower case) -> (dimension, factor to base unit, canonical symbol)
_DAY = 86400.0
_YEAR = 365.2425 * _DAY
_UNITS: dict[str, tuple[str, float, str]] = {}


def _u(dim: str, factor: float, canon: str, names: str) -> None:
    for n in names.split():
        _UNITS[n] = (dim, factor, canon)


_u("length", 1e-3, "mm", "mm millimetre millimetres millimeter millimeters")
_u("length", 1e-2, "cm", "cm centimetre centimetres centimeter centimeters")
_u("length", 1.0, "m", "m metre metres meter meters")
_u("length", 1e3, "km", "km kms kilometre kilometres kilometer kilometers")
_u("length", 0.0254, "in", "inch inches")
_u("length", 0.3048, "ft", "ft foot feet")
_u("length", 0.9144, "yd", "yd yds yard yards")
_u("length", 1609.344, "mi", "mi mile miles")
_u("mass", 1e-6, "mg", "mg milligram milligrams milligramme milligrammes")
_u("mass", 1e-3, "g", "g gram grams gramme grammes")
_u("mass", 1.0, "kg", "kg kgs kilogram kilograms kilo kilos")
_u("mass", 1e3, "t", "tonne tonnes ton tons")
_u("mass", 0.45359237, "lb", "lb lbs pound pounds")
_u("mass", 0.028349523, "oz", "oz ounce ounces")
_u("volume", 1e-3, "ml", "ml millilitre millilitres milliliter milliliters")
_u("volume", 1.0, "l", "l litre litres liter liters")
_u("volume", 3.785411784, "gal", "gallon gallons gal")
_u("volume", 1e3, "m3", "m3 m³")
_u("duration", 1e-3, "ms", "ms millisecond milliseconds")
_u("duration", 1.0, "s", "s sec secs second seconds")
_u("duration", 60.0, "min", "min mins minute minutes")
_u("duration", 3600.0, "h", "h hr hrs hour hours")
_u("duration", _DAY, "day", "day days")
_u("duration", 7 * _DAY, "week", "week weeks wk wks")
_u("duration", 14 * _DAY, "fortnight", "fortnight fortnights")
_u("duration", _YEAR / 12, "month", "month months mo mos")
_u("duration", _YEAR, "year", "year years yr yrs")
_u("duration", 10 * _YEAR, "decade", "decade decades")
_u("duration", 100 * _YEAR, "century", "century centuries")
_u("data", 1.0, "B", "byte bytes")
_u("data", 1e3, "KB", "kb kilobyte kilobytes")
_u("data", 1e6, "MB", "mb megabyte megabytes")
_u("data", 1e9, "GB", "gb gigabyte gigabytes")
_u("data", 1e12, "TB", "tb terabyte terabytes")
_u("data", 1024.0, "KiB", "kib")
_u("data", 1024.0 ** 2, "MiB", "mib")
_u("data", 1024.0 ** 3, "GiB", "gib")
_u("data", 1024.0 ** 4, "TiB", "tib")
_u("speed", 1 / 3.6, "km/h", "km/h kmh kph")
_u("speed", 0.44704, "mph", "mph")
_u("speed", 1.0, "m/s", "m/s")
_u("speed", 0.514444, "kn", "knot knots kn")
_u("charge", 1.0, "mAh", "mah")
_u("energy", 1.0, "kWh", "kwh")
_u("power", 1.0, "W", "w watt watts")
_u("power", 1e3, "kW", "kw kilowatt kilowatts")
_u("frequency", 1e9, "GHz", "ghz")
_u("frequency", 1e6, "MHz", "mhz")
_u("calories", 1.0, "kcal", "kcal calorie calories")
_u("percent", 1.0, "%", "% percent pct")
_u("dose", 1.0, "IU", "iu")

_CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "us$": "USD"}
_CURRENCY_CODES = {"usd": "USD", "eur": "EUR", "gbp": "GBP", "jpy": "JPY", "chf": "CHF",
                   "cad": "CAD", "aud": "AUD", "inr": "INR", "cny": "CNY"}
_CURRENCY_WORDS = {"dollar": "USD", "dollars": "USD", "euro": "EUR", "euros": "EUR", "yen": "JPY",
                   "cent": "USD_CENT", "cents": "USD_CENT", "rupee": "INR", "rupees": "INR",
                   "francs": "CHF", "franc": "CHF"}

_ABBREVIATED_NOUNS = {"req": "request", "reqs": "request", "msg": "message", "msgs": "message",
                      "ppl": "people", "pts": "point", "pt": "point", "emp": "employee"}

_BOUNDS = [  # (phrase, bound) -- longest first
    ("no more than", "le"), ("no less than", "ge"), ("no fewer than", "ge"), ("not more than", "le"),
    ("not less than", "ge"), ("a minimum of", "ge"), ("a maximum of", "le"), ("at least", "ge"),
    ("at most", "le"), ("more than", "gt"), ("greater than", "gt"), ("less than", "lt"),
    ("fewer than", "lt"), ("up to", "le"), ("as many as", "le"), ("as much as", "le"),
    ("minimum of", "ge"), ("maximum of", "le"), ("limited to", "le"), ("capped at", "le"),
    ("just over", "gt"), ("just under", "lt"), ("close to", "approx"), ("in excess of", "gt"),
    ("over", "gt"), ("above", "gt"), ("exceeding", "gt"), ("under", "lt"), ("below", "lt"),
    ("about", "approx"), ("approximately", "approx"), ("approx", "approx"), ("around", "approx"),
    ("roughly", "approx"), ("nearly", "approx"), ("almost", "approx"), ("circa", "approx"),
    ("some", "approx"), ("~", "approx"), ("estimated", "approx"), ("an estimated", "approx"),
    ("maximum", "le"), ("minimum", "ge"), ("max", "le"), ("min", "ge"),
]

_DIMENSION_ADJECTIVES = frozenset("""long tall high wide deep thick old away apart ago later long
across in-length""".split())

_YEAR_PREPOSITIONS = frozenset("in since by until till from of during before after circa to the "
                               "early late mid end start beginning around".split())

_IRREGULAR = {
    "won": "win", "grew": "grow", "grown": "grow", "fell": "fall", "fallen": "fall", "rose": "rise",
    "risen": "rise", "began": "begin", "begun": "begin", "ran": "run", "built": "build",
    "bought": "buy", "sold": "sell", "made": "make", "took": "take", "taken": "take", "gave": "give",
    "given": "give", "went": "go", "gone": "go", "held": "hold", "born": "born", "men": "man",
    "women": "woman", "children": "child", "people": "person", "feet": "foot", "teeth": "tooth",
    "mice": "mouse", "data": "data", "media": "medium", "lay": "lie", "lain": "lie", "lies": "lie",
    "wrote": "write", "written": "write", "found": "find", "led": "lead", "left": "leave",
    "paid": "pay", "shrank": "shrink", "shrunk": "shrink", "drove": "drive", "driven": "drive",
    "flew": "fly", "flown": "fly", "spoke": "speak", "spoken": "speak", "chose": "choose",
    "chosen": "choose", "kept": "keep", "met": "meet", "sent": "send", "spent": "spend", "lost": "lose",
    "brought": "bring", "thought": "think", "taught": "teach", "caught": "catch", "fought": "fight",
    "sought": "seek", "known": "know", "knew": "know", "shown": "show", "seen": "see", "saw": "see",
    "became": "become", "came": "come", "says": "say", "said": "say", "has": "have", "had": "have",
}


def stem(word: str) -> str:
    """A light stemmer: lower case, irregular forms, plural and verb endings."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'")
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) <= 3:
        return w
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"),
                         ("xes", "x"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and (w.endswith("ss") or w.endswith("us") or w.endswith("is")):
                return w
            base = w[: len(w) - len(suffix)] + repl
            if suffix in ("ing", "ed") and len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # stopped -> stop
            return base
    return w


def words_match(a: str, b: str) -> bool:
    """Lexical match of two words: same stem or a shared prefix of five or more letters."""
    if a == b:
        return True
    sa, sb = stem(a), stem(b)
    if sa == sb or sa + "e" == sb or sb + "e" == sa:
        return True
    n = 0
    for x, y in zip(sa, sb):
        if x != y:
            break
        n += 1
    return n >= 5 or (n >= 4 and n == min(len(sa), len(sb)))


# --------------------------------------------------------------------------- tokens

_TOKEN_RE = re.compile(
    r"(?P<iso>\d{4}-\d{2}-\d{2})"
    r"|(?P<time>\d{1,2}:\d{2}(?::\d{2})?)"
    r"|(?P<ampm>[aApP]\.[mM]\.?)"
    r"|(?P<num>\d+(?:[.,]\d+)*)"
    r"|(?P<word>[A-Za-z][A-Za-z0-9]*(?:['’][A-Za-z]+)?(?:-[A-Za-z0-9]+(?:['’][A-Za-z]+)?)*)"
    r"|(?P<sym>°[CFcf]?|[$€£¥%~/–—-]|[^\sA-Za-z\d])"
)


@dataclass
class Token:
    text: str
    kind: str  # iso | time | ampm | num | word | sym
    start: int
    end: int
    initial: bool = False  # opens a sentence

    @property
    def low(self) -> str:
        t = self.text.lower().replace("’", "'")
        if t.endswith("'s"):
            t = t[:-2]
        return t

    @property
    def is_cap(self) -> bool:
        return self.kind == "word" and self.text[0].isupper()


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "sym"
        tokens.append(Token(m.group(), kind, m.start(), m.end()))
    # Mark sentence-initial tokens (first word, and words after . ! ? : ; or an opening quote).
    expect = True
    for t in tokens:
        if t.kind == "sym":
            if t.text in ".!?:;•\n" or t.text in "\"“(['‘":
                expect = True if t.text in ".!?:;•" or expect else expect
            continue
        if expect:
            t.initial = True
        expect = False
    return tokens


# --------------------------------------------------------------------------- facts


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
    bound: str = "eq"  # eq | approx | ge | gt | le | lt
    raw: float | None = None  # the number as written, before unit conversion
    weak: bool = False  # absence is not a reason for "unverifiable"
    tokens: tuple[int, ...] = ()  # token indices this fact covers

    def describe(self) -> str:
        if self.kind == "date":
            y, m, d = self.value  # type: ignore[misc]
            if y and m and d:
                return f"{y:04d}-{m:02d}-{d:02d}"
            if y and m:
                return f"{y:04d}-{m:02d}"
            parts = [str(y) if y else None, _MONTH_NAMES[m] if m else None, str(d) if d else None]
            return " ".join(p for p in parts if p)
        if self.kind == "time":
            v = int(self.value)  # type: ignore[arg-type]
            return f"{v // 60:02d}:{v % 60:02d}"
        if self.kind == "quantity":
            return _describe_quantity(self)
        return self.text


_MONTH_NAMES = [None, "January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December"]


def _fmt_number(x: float) -> str:
    if x is None or math.isinf(x):
        return str(x)
    if abs(x - round(x)) < 1e-9 and abs(x) < 1e15:
        return str(int(round(x)))
    return f"{x:.6g}"


def _describe_quantity(f: Fact) -> str:
    prefix = {"ge": "at least ", "gt": "more than ", "le": "up to ", "lt": "less than ",
              "approx": "about "}.get(f.bound, "")
    raw = _fmt_number(f.raw if f.raw is not None else float(f.value))  # type: ignore[arg-type]
    if f.dim.startswith("currency:"):
        unit = f.dim.split(":", 1)[1]
        return f"{prefix}{raw} {unit}"
    unit = f.unit or (f.noun[-1] if f.noun else "")
    if unit == "%":
        return f"{prefix}{raw}%"
    return f"{prefix}{raw} {unit}".strip()


def parse_number(text: str) -> float | None:
    """``1,000`` → 1000.0, ``3.5`` → 3.5, ``twelve`` → 12, ``twenty-one`` → 21; None otherwise."""
    t = text.strip().lower()
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
    parts = low.split("-")
    return all(p in _UNITS_1 or p in _TENS for p in parts) and bool(parts)


@dataclass
class Analysis:
    text: str
    tokens: list[Token]
    facts: list[Fact]
    polarity: int  # number of negative cues (parity matters)
    negation_cues: list[str]
    directions: dict[str, tuple[int, str]]  # group -> (side, word)
    universal: list[str]
    partial: list[str]
    content: list[tuple[int, str]]  # (token index, lower word) content words, entities included
    entity_tokens: set[int]
    words: set[str]  # all lower-case words and their stems (presence checks)
    than_after: set[str] = field(default_factory=set)
    than_before: set[str] = field(default_factory=set)
    polar: set[int] = field(default_factory=set)  # polarity / direction words among the content

    @property
    def strong_facts(self) -> list[Fact]:
        return [f for f in self.facts if not f.weak]


def proper_vocabulary(texts: Iterable[str]) -> frozenset[str]:
    """Lower-case words that are written capitalised in the middle of a sentence somewhere
    in ``texts`` and never in lower case: names the texts themselves treat as proper nouns."""
    capital: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for t in tokenize(text):
            if t.kind != "word":
                continue
            if t.text[0].isupper():
                if not t.initial:
                    capital.add(t.low)
            else:
                lower.add(t.low)
    return frozenset(capital - lower - STOPWORDS)


def analyse(text: str, proper: frozenset[str] | set[str] = frozenset()) -> Analysis:
    """Facts and alignment signals of one sentence (or a short passage)."""
    tokens = tokenize(text)
    used: set[int] = set()
    facts: list[Fact] = []
    _extract_dates(tokens, used, facts, text)
    _extract_times(tokens, used, facts, text)
    _extract_quantities(tokens, used, facts, text)
    _extract_entities(tokens, used, facts, text, proper)
    _extract_ordinals(tokens, used, facts)
    facts.sort(key=lambda f: f.start)

    entity_tokens = {i for f in facts if f.kind == "entity" for i in f.tokens}
    neg_cues: list[str] = []
    directions: dict[str, tuple[int, str]] = {}
    universal: list[str] = []
    partial: list[str] = []
    content: list[tuple[int, str]] = []
    polar: set[int] = set()
    words: set[str] = set()
    for i, t in enumerate(tokens):
        if t.kind != "word":
            continue
        low = t.low
        words.add(low)
        words.add(stem(low))
        if i in used and i not in entity_tokens:
            continue
        if low in _NEGATIONS and not (low == "none" and t.text[0].isupper()):
            neg_cues.append(low)
            continue
        if low in _NEGATIVE_STATES:
            neg_cues.append(low)
            polar.add(i)
            content.append((i, low))
            continue
        if low in _UNIVERSAL:
            universal.append(low)
            continue
        if low in _PARTIAL:
            partial.append(low)
            continue
        if low in _DIRECTION_WORDS and i not in entity_tokens:
            group, side = _DIRECTION_WORDS[low]
            directions.setdefault(group, (side, low))
            polar.add(i)
            if low not in STOPWORDS:
                content.append((i, low))
            continue
        if low in _POSITIVE_STATES:
            polar.add(i)
            content.append((i, low))
            continue
        if low in STOPWORDS or low in _FILLER or len(low) < 2:
            continue
        content.append((i, low))
    # "not only", "at no cost", "no doubt" do not negate
    lows = [t.low for t in tokens]
    for i in range(len(lows) - 1):
        pair = (lows[i], lows[i + 1])
        if pair in _NON_NEGATING and pair[0] in neg_cues:
            neg_cues.remove(pair[0])
        elif i > 0 and lows[i - 1] == "at" and lows[i] == "no" and "no" in neg_cues:
            neg_cues.remove("no")  # "at no charge", "at no extra cost"

    than_after: set[str] = set()
    than_before: set[str] = set()
    for i, t in enumerate(tokens):
        if t.low == "than" and i not in used:
            than_after = {stem(x.low) for x in tokens[i + 1:i + 6]
                          if x.kind == "word" and x.low not in STOPWORDS and x.low not in _DIRECTION_WORDS}
            than_before = {stem(x.low) for x in tokens[max(0, i - 8):i]
                           if x.kind == "word" and x.low not in STOPWORDS and x.low not in _DIRECTION_WORDS}
            break
    return Analysis(text, tokens, facts, len(neg_cues), neg_cues, directions, universal, partial,
                    content, entity_tokens, words, than_after, than_before, polar)


# ----------------------------------------------------------------- fact extractors


def _next_word(tokens: list[Token], i: int, skip: str = ",") -> int | None:
    j = i + 1
    while j < len(tokens) and tokens[j].kind == "sym" and tokens[j].text in skip:
        j += 1
    return j if j < len(tokens) else None


def _month_at(tokens: list[Token], i: int) -> int | None:
    t = tokens[i]
    if t.kind != "word" or not t.text[0].isupper():
        return None
    low = t.low.rstrip(".")
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
    if low in ("mar", "jan", "jun", "jul", "aug", "sep", "oct", "nov", "dec", "feb", "apr", "sept") \
            and t.text != t.text.capitalize():
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
    if i + 1 < len(tokens) and tokens[i + 1].kind == "word" and tokens[i + 1].low in ("st", "nd", "rd", "th") \
            and tokens[i + 1].start == t.end:
        end = i + 1
    return d, end


def _year_at(tokens: list[Token], i: int) -> int | None:
    t = tokens[i]
    if t.kind == "num" and re.fullmatch(r"\d{4}", t.text):
        y = int(t.text)
        if 1000 <= y <= 2199:
            return y
    return None


def _extract_dates(tokens: list[Token], used: set[int], facts: list[Fact], text: str) -> None:
    n = len(tokens)

    def add(value: tuple, i0: int, i1: int, weak: bool = False) -> None:
        idx = tuple(range(i0, i1 + 1))
        used.update(idx)
        facts.append(Fact("date", value, text[tokens[i0].start:tokens[i1].end],
                          tokens[i0].start, tokens[i1].end, weak=weak, tokens=idx))

    for i, t in enumerate(tokens):
        if t.kind == "iso" and i not in used:
            y, m, d = (int(x) for x in t.text.split("-"))
            if 1 <= m <= 12 and 1 <= d <= 31:
                add((y, m, d), i, i)

    i = 0
    while i < n:
        if i in used:
            i += 1
            continue
        # Day [–Day] [of] Month [,] [Year]
        day = _day_at(tokens, i)
        if day is not None:
            d1, j = day
            d2 = None
            k = j + 1
            if k + 1 < n and tokens[k].text in ("–", "-", "—") and _day_at(tokens, k + 1):
                d2, j2 = _day_at(tokens, k + 1)  # type: ignore[misc]
                k = j2 + 1
            if k < n and tokens[k].low == "of":
                k += 1
            if k < n and _month_at(tokens, k):
                month = _month_at(tokens, k)
                end = k
                year = None
                k2 = _next_word(tokens, k)
                if k2 is not None and _year_at(tokens, k2):
                    year, end = _year_at(tokens, k2), k2
                if d2 is not None:
                    add((year, month, d1), i, i)
                    add((year, month, d2), i + 2 if tokens[i + 1].text in ("–", "-", "—") else i, end)
                else:
                    add((year, month, d1), i, end)
                i = end + 1
                continue
        month = _month_at(tokens, i)
        if month is not None:
            k = _next_word(tokens, i)
            if k is not None and tokens[k].low == "of":
                k = _next_word(tokens, k)
            if k is not None and _year_at(tokens, k) and not _day_at(tokens, k):
                add((_year_at(tokens, k), month, None), i, k)
                i = k + 1
                continue
            if k is not None and _day_at(tokens, k):
                d1, j = _day_at(tokens, k)  # type: ignore[misc]
                days = [(d1, k, j)]
                k2 = j + 1
                if k2 + 1 < n and tokens[k2].text in ("–", "-", "—") and _day_at(tokens, k2 + 1):
                    d2, j2 = _day_at(tokens, k2 + 1)  # type: ignore[misc]
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

    # Weekdays: weak facts
    for i, t in enumerate(tokens):
        if i not in used and t.kind == "word" and t.text[0].isupper() and t.low in _WEEKDAYS:
            used.add(i)
            facts.append(Fact("weekday", _WEEKDAYS[t.low], t.text, t.start, t.end, weak=True, tokens=(i,)))

    # Bare years
    for i, t in enumerate(tokens):
        if i in used:
            continue
        y = _year_at(tokens, i)
        if y is None:
            continue
        prev = tokens[i - 1] if i > 0 else None
        nxt = tokens[i + 1] if i + 1 < n else None
        if prev is not None and prev.kind == "sym" and prev.text in "$€£¥":
            continue
        if nxt is not None and nxt.kind == "word" and nxt.start == t.end and nxt.low == "s":
            continue  # "1990s"
        if nxt is not None and nxt.kind == "word" and (nxt.low in _UNITS or nxt.low in _SCALES):
            continue
        if nxt is not None and nxt.kind == "sym" and nxt.text in ("%",):
            continue
        if nxt is not None and nxt.kind == "word" and not nxt.text[0].isupper() \
                and nxt.low not in STOPWORDS and nxt.low not in _FILLER \
                and not (prev is not None and prev.low in _YEAR_PREPOSITIONS):
            continue  # "2000 requests", "1000 req/min"
        if prev is not None and prev.kind == "word" and prev.is_cap and prev.low not in STOPWORDS \
                and prev.low not in _MONTHS and not prev.initial:
            continue  # "Windows 2000" is an identifier
        used.add(i)
        facts.append(Fact("date", (y, None, None), t.text, t.start, t.end, tokens=(i,)))


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
            if nxt is not None and (nxt.kind == "ampm" or nxt.low in ("am", "pm")):
                if nxt.low.startswith("p") and h < 12:
                    minutes += 12 * 60
                if nxt.low.startswith("a") and h == 12:
                    minutes -= 12 * 60
                end = i + 1
        elif t.kind == "num" and re.fullmatch(r"\d{1,2}", t.text) and i + 1 < n:
            nxt = tokens[i + 1]
            if nxt.kind == "ampm" or (nxt.kind == "word" and nxt.low in ("am", "pm", "a.m", "p.m")):
                h = int(t.text)
                if 1 <= h <= 12:
                    minutes = (h % 12) * 60 + (720 if nxt.low.startswith("p") else 0)
                    end = i + 1
                    if i + 2 < n and tokens[i + 2].text == "." and tokens[i + 2].start == nxt.end \
                            and nxt.low in ("a.m", "p.m"):
                        end = i + 2
        elif t.kind == "word" and t.low in ("noon", "midday", "midnight"):
            minutes = 0 if t.low == "midnight" else 720
        if minutes is not None:
            idx = tuple(range(i, end + 1))
            used.update(idx)
            facts.append(Fact("time", minutes % 1440, text[t.start:tokens[end].end], t.start,
                              tokens[end].end, tokens=idx))


def _bound_before(tokens: list[Token], i: int, used: set[int]) -> tuple[str, int]:
    """The bound phrase ending right before token i: (bound, first token index)."""
    words = []
    j = i - 1
    while j >= 0 and len(words) < 3 and tokens[j].kind in ("word", "sym") and j not in used:
        if tokens[j].kind == "sym" and tokens[j].text != "~":
            break
        words.insert(0, (j, tokens[j].low))
        j -= 1
    for phrase, bound in _BOUNDS:
        parts = phrase.split()
        if len(parts) <= len(words) and [w for _, w in words[len(words) - len(parts):]] == parts:
            return bound, words[len(words) - len(parts)][0]
    return "eq", i


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
    if t.kind == "sym" and t.text.startswith("°"):
        scale = t.text[1:].upper()
        end = j
        if not scale and j + 1 < n and tokens[j + 1].low in ("c", "f", "celsius", "fahrenheit") \
                and tokens[j + 1].start == t.end:
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
    if low in _UNITS:
        # single letters only when glued to the number or clearly a unit ("5 m", "30 g")
        if len(low) == 1 and low not in ("m", "g", "h", "s", "l", "%"):
            return None
        if low in ("s", "h", "m", "g", "l") and not glued and j + 1 < n and tokens[j + 1].kind == "word" \
                and tokens[j + 1].low not in STOPWORDS and tokens[j + 1].low not in _DIMENSION_ADJECTIVES:
            return None
        d, f, c = _UNITS[low]
        # MB vs mb vs Mb: bits are rare in prose; treat as bytes.
        return (d, f, c, j)
    return None


def _extract_quantities(tokens: list[Token], used: set[int], facts: list[Fact], text: str) -> None:
    n = len(tokens)
    i = 0
    while i < n:
        t = tokens[i]
        if i in used:
            i += 1
            continue
        value: float | None = None
        end = i
        noun_from_hyphen: str | None = None
        if t.kind == "num":
            if re.fullmatch(r"\d+\.\d+\.\d+", t.text):
                i += 1
                continue  # version numbers are handled as identifiers
            value = parse_number(t.text)
        elif t.kind == "word":
            low = t.low
            head = low.split("-")
            if low in ("half", "quarter", "third", "thirds", "quarters") and i + 1 < n and tokens[i + 1].low == "of":
                frac = {"half": 50.0, "quarter": 25.0, "third": 100 / 3, "thirds": 200 / 3, "quarters": 75.0}[low]
                start_i = i
                if low in ("thirds", "quarters") and i > 0 and tokens[i - 1].low in ("two", "three"):
                    start_i = i - 1
                elif i > 0 and tokens[i - 1].low in ("a", "one"):
                    start_i = i - 1
                bound, b0 = _bound_before(tokens, start_i, used)
                idx = tuple(range(b0, i + 1))
                used.update(idx)
                facts.append(Fact("quantity", frac, text[tokens[b0].start:t.end], tokens[b0].start, t.end,
                                  dim="percent", unit="%", bound=bound if bound != "eq" else (
                                      "approx" if low in ("third", "thirds") else "eq"),
                                  raw=frac, tokens=idx))
                i += 1
                continue
            if low in ("dozen",):
                value = 12.0
            elif low in ("once", "twice") and i + 2 < n and tokens[i + 1].low in ("a", "an", "per", "every") \
                    and tokens[i + 2].low in _UNITS and _UNITS[tokens[i + 2].low][0] == "duration":
                value = 1.0 if low == "once" else 2.0
            elif _is_number_word(low) or (len(head) == 2 and _is_number_word(head[0])):
                if _is_number_word(low):
                    # join "twenty one", "two hundred", "one thousand"
                    j = i
                    words = [low]
                    while j + 1 < n and tokens[j + 1].kind == "word" and (
                            _is_number_word(tokens[j + 1].low) or tokens[j + 1].low in _SCALES):
                        j += 1
                        words.append(tokens[j].low)
                    value = parse_number(" ".join(words))
                    end = j
                else:
                    value = parse_number(head[0])
                    noun_from_hyphen = head[1]
                if low == "one" and i + 1 < n and tokens[i + 1].low in ("of", "another"):
                    value = None
            elif low in ("a", "an") and i + 1 < n and tokens[i + 1].low in ("dozen", "hundred", "thousand", "million"):
                value = parse_number(f"one {tokens[i + 1].low}") if tokens[i + 1].low != "dozen" else 12.0
                end = i + 1
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
        if j < n and tokens[j].kind == "word" and (tokens[j].low in _SCALES or tokens[j].low in _SHORT_SCALES
                                                   or (currency and tokens[j].low in ("m", "b"))):
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
            if u:
                dim, factor, unit = u
            else:
                nouns = [stem(noun_from_hyphen)]
        elif currency is None:
            k = j
            if k < n and tokens[k].text == "-" and tokens[k].start == tokens[k - 1].end:
                k += 1  # "24-month"
            glued = k < n and tokens[k].start == tokens[k - 1].end
            u = _unit_at(tokens, k, glued)
            if u is not None:
                dim, factor, unit, end = u
                j = end + 1
            elif k < n and tokens[k].kind == "word" and tokens[k].low in _CURRENCY_WORDS:
                currency = _CURRENCY_WORDS[tokens[k].low]
                end = k
                j = k + 1
            elif k < n and tokens[k].kind == "word" and tokens[k].low in _CURRENCY_CODES:
                currency = _CURRENCY_CODES[tokens[k].low]
                end = k
                j = k + 1
        if currency:
            if currency == "USD_CENT":
                currency, value, raw = "USD", value / 100, raw
            dim, unit, factor = f"currency:{currency}", currency, 1.0
        if dim == "temperature":
            if unit == "°F":
                value = (value - 32) * 5 / 9
            elif unit == "K":
                value = value - 273.15
        else:
            value = value * factor
        # "1.2 km long", "21 days apart", "5 years old": the adjective belongs to the quantity
        if dim not in ("count", "percent") and not dim.startswith("currency") and j < n \
                and tokens[j].low in _DIMENSION_ADJECTIVES:
            end = j
            j += 1
        # count nouns: up to two content words after the number ("15 water stations")
        if dim == "count" and not nouns:
            k = j
            while k < n and len(nouns) < 2:
                tk = tokens[k]
                if tk.kind != "word" or tk.low in STOPWORDS or tk.low in _FILLER or k in used \
                        or _is_number_word(tk.low) or tk.low in _UNITS or tk.low in _ORDINALS \
                        or tk.low in _SCALES or (tk.text[0].isupper() and nouns):
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
        k = j
        # allow "of X" or one more word before "per": "1,000 requests per minute", "7 million visitors a year"
        if k + 1 < n and (tokens[k].low in ("per", "a", "an", "each", "every") or tokens[k].text == "/"):
            nxt = tokens[k + 1]
            u = _UNITS.get(nxt.low)
            if u is not None and u[0] == "duration":
                if tokens[k].low in ("a", "an", "per", "each", "every") or tokens[k].text == "/":
                    value = value / u[1]
                    per = "duration"
                    end = k + 1
            elif tokens[k].low == "per" and nxt.kind == "word" and nxt.low not in STOPWORDS:
                per = stem(nxt.low)
                end = k + 1
        if dim == "count" and tokens[i].kind == "num" and i > 0:
            prev = tokens[i - 1]
            # identifiers: "Apollo 11", "Python 3.12", "Room 3B", "Windows 11"
            if prev.kind == "word" and prev.is_cap and prev.low not in STOPWORDS and prev.low not in _MONTHS \
                    and prev.low not in _WEEKDAYS and (i - 1) not in used and bound == "eq" \
                    and prev.low not in ("chapter",) and not currency:
                tail = ""
                e = i
                if i + 1 < n and tokens[i + 1].kind == "word" and tokens[i + 1].start == t.end:
                    tail = tokens[i + 1].low
                    e = i + 1
                ident = f"{prev.low} {t.text.lower()}{tail}"
                idx = (i - 1, i) + ((e,) if e != i else ())
                used.update(idx)
                facts.append(Fact("entity", ident, text[prev.start:tokens[e].end], prev.start, tokens[e].end,
                                  dim="identifier", tokens=idx))
                i = e + 1
                continue
        idx = tuple(range(start_i, end + 1))
        used.update(idx)
        # "one charge", "one of": a count of one written as a word is often just an article
        weak = dim == "count" and raw == 1 and tokens[i].kind == "word" and bound == "eq" and not per
        facts.append(Fact("quantity", float(value), text[tokens[start_i].start:tokens[end].end],
                          tokens[start_i].start, tokens[end].end, dim=dim, unit=unit, noun=tuple(nouns),
                          per=per, bound=bound, raw=float(raw), weak=weak, tokens=idx))
        i = end + 1

    # version-like identifiers standing alone ("3.12.0")
    for i, t in enumerate(tokens):
        if i not in used and t.kind == "num" and re.fullmatch(r"\d+\.\d+\.\d+", t.text):
            prev = tokens[i - 1] if i > 0 else None
            name = prev.low if prev is not None and prev.is_cap else ""
            s = prev.start if name else t.start
            idx = ((i - 1,) if name else ()) + (i,)
            used.update(idx)
            facts.append(Fact("entity", f"{name} {t.text}".strip(), text[s:t.end], s, t.end,
                              dim="identifier", tokens=idx))


_NOT_ENTITIES = frozenset("""i i'm i've i'd i'll ok okay yes no note warning tip example step""".split())
_ENTITY_CONNECTORS = frozenset("of upon de del der van von da di la le".split())


def _extract_entities(tokens: list[Token], used: set[int], facts: list[Fact], text: str,
                      proper: frozenset[str] | set[str]) -> None:
    n = len(tokens)
    is_ent = [False] * n
    for i, t in enumerate(tokens):
        if i in used or t.kind != "word":
            continue
        low = t.low
        if low in _NOT_ENTITIES or low in _UNITS and not t.text.isupper() or low in _MONTHS and t.text[0].isupper():
            continue
        if low in _CURRENCY_CODES:
            continue
        has_inner_cap = any(c.isupper() for c in t.text[1:]) and not t.text.isupper()
        acronym = t.text.isupper() and len(t.text) >= 2 and t.text.isalpha()
        if has_inner_cap or acronym:
            if low in _UNITS and low not in proper:
                continue  # "GB", "MB" are units
            is_ent[i] = True
            continue
        if not t.text[0].isupper():
            continue
        if low in STOPWORDS or low in _FILLER or low in _NEGATIONS or low in _DIRECTION_WORDS \
                or low in _UNIVERSAL or low in _PARTIAL:
            continue
        if not t.initial:
            is_ent[i] = True
            continue
        # sentence-initial capital: a name only if the texts use it as one, or a capitalised
        # word or a number follows it ("Pierre Curie", "Apollo 11")
        nxt = tokens[i + 1] if i + 1 < n else None
        if low in proper or (nxt is not None and nxt.kind == "word" and nxt.text[0].isupper()
                             and nxt.low not in STOPWORDS):
            is_ent[i] = True
    i = 0
    while i < n:
        if not is_ent[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and (is_ent[j + 1] or (tokens[j + 1].low in _ENTITY_CONNECTORS and j + 2 < n
                                               and is_ent[j + 2])):
            j += 1
        idx = tuple(k for k in range(i, j + 1) if is_ent[k])
        phrase = text[tokens[i].start:tokens[j].end]
        used.update(range(i, j + 1))
        for k in idx:
            # a lone acronym ("API", "RAM", "UTC") is as often a common noun as a name:
            # it can conflict, but its absence alone does not make a claim unverifiable
            acronym_only = len(idx) == 1 and tokens[k].text.isupper()
            facts.append(Fact("entity", tokens[k].low, phrase, tokens[k].start, tokens[k].end,
                              dim="name", weak=acronym_only, tokens=idx))
        i = j + 1


def _extract_ordinals(tokens: list[Token], used: set[int], facts: list[Fact]) -> None:
    n = len(tokens)
    for i, t in enumerate(tokens):
        if i in used:
            continue
        value = None
        if t.kind == "word" and t.low in _ORDINALS:
            value = _ORDINALS[t.low]
            if t.low == "second" and i > 0 and tokens[i - 1].kind == "num":
                continue
        elif t.kind == "num" and re.fullmatch(r"\d+", t.text) and i + 1 < n and tokens[i + 1].low in (
                "st", "nd", "rd", "th") and tokens[i + 1].start == t.end:
            value = int(t.text)
        if value is not None:
            used.add(i)
            facts.append(Fact("ordinal", value, t.text, t.start, t.end, weak=True, tokens=(i,)))


# --------------------------------------------------------------------------- alignment


@dataclass
class Conflict:
    kind: str  # number | unit | date | time | entity | negation | antonym | quantifier | ordinal
    claim: str
    source: str
    confidence: float
    reason: str


@dataclass
class Alignment:
    conflicts: list[Conflict]
    missing: list[Fact]  # strong claim facts found nowhere in the source
    matched: list[tuple[Fact, Fact]]
    coverage: float  # share of the claim's content words found in the span
    uncovered: list[str]
    support_coverage: float = 0.0  # coverage counting each exactly matched value as two covered words

    @property
    def best_conflict(self) -> Conflict | None:
        return max(self.conflicts, key=lambda c: c.confidence) if self.conflicts else None


WordSim = Callable[[str, str], float]

# Physical dimensions name their slot by themselves; the others (durations, money, shares,
# plain counts) recur in one text for different things, so a conflict needs more context.
_STRONG_DIMS = frozenset("length mass volume temperature speed data charge energy power frequency "
                         "calories dose".split())

#: In the support score, a matched number / date / name weighs as much as two content words.
FACT_WEIGHT = 2

_REL_TOL_SAME_UNIT = 1e-6
_REL_TOL_CONVERTED = 0.02
_APPROX_TOL = 0.10


def _interval(f: Fact) -> tuple[float, float, bool, bool]:
    v = float(f.value)  # type: ignore[arg-type]
    if f.bound == "approx":
        d = abs(v) * _APPROX_TOL
        return v - d, v + d, False, False
    if f.bound in ("ge", "gt"):
        return v, math.inf, f.bound == "gt", False
    if f.bound in ("le", "lt"):
        return -math.inf, v, False, f.bound == "lt"
    return v, v, False, False


def _close(a: float, b: float, tol: float) -> bool:
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


def compare_quantities(c: Fact, s: Fact) -> str:
    """"match", "conflict", "unit" (same number, different unit of the same kind) or "compatible"."""
    if c.raw is not None and s.raw is not None and c.unit and s.unit and c.unit != s.unit \
            and _close(c.raw, s.raw, 1e-9) and c.dim == s.dim and not _close(float(c.value), float(s.value), 0.02):  # type: ignore[arg-type]
        return "unit"
    tol = _REL_TOL_SAME_UNIT if c.unit == s.unit else _REL_TOL_CONVERTED
    cv, sv = float(c.value), float(s.value)  # type: ignore[arg-type]
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
    if clo - slack <= slo and shi <= chi + slack:
        return "match"  # the claim is as weak as or weaker than the source
    if c.bound in ("eq", "approx") and s.bound in ("le", "ge", "approx") and _close(cv, sv, max(tol, 0.001)):
        return "match"
    return "compatible"


def _dates_relation(c: tuple, s: tuple) -> str:
    agree = True
    for a, b in zip(c, s):
        if a is not None and b is not None and a != b:
            return "conflict"
        if a is not None and b is None:
            agree = False
    return "match" if agree else "compatible"


def _exact(c: Fact, s: Fact) -> bool:
    """Same value (whatever the bound words), not just a value inside the claim's bounds."""
    if c.kind != "quantity":
        return True
    return _close(float(c.value), float(s.value), 0.02)  # type: ignore[arg-type]


def _entity_present(f: Fact, words: set[str], text_low: str) -> bool:
    if f.dim == "identifier":
        return re.sub(r"\s+", " ", str(f.value)) in re.sub(r"\s+", " ", text_low)
    v = str(f.value)
    return v in words or stem(v) in words or _alias_in_text(f.text, text_low)


_ACRONYM_SKIP = frozenset({"of", "the", "for", "and", "on", "in", "&"})


def _initials(words: list[str]) -> str:
    return "".join(w[0] for w in words if w and w not in _ACRONYM_SKIP)


def is_alias(short: str, long: str) -> bool:
    """Whether one name is a short form of the other: an acronym ("WHO" for "World Health
    Organization") or a clipped first word ("Fed" for "Federal Reserve"). Without this a
    source's full name reads as a different entity and a faithful claim as a contradiction."""
    a, b = short.strip(), long.strip()
    if len(a) > len(b):
        a, b = b, a
    a_words, b_words = a.lower().split(), b.lower().split()
    if len(a_words) != 1 or len(b_words) < 2 or len(a) < 2:
        return False
    word = a_words[0].strip(".")
    if a.isupper() and _initials(b_words) == word:
        return True
    return len(word) >= 3 and b_words[0].startswith(word) and b_words[0] != word


def _alias_in_text(name: str, text_low: str) -> bool:
    """A one-word name whose long form (acronym expansion or clipped word) stands in the text."""
    if not name or " " in name.strip():
        return False
    word = name.strip().lower().strip(".")
    tokens = re.findall(r"[a-z&]+", text_low)
    if name.isupper() and 2 <= len(word) <= 8:
        letters = [t for t in tokens if t not in _ACRONYM_SKIP]
        for i in range(len(letters) - len(word) + 1):
            if "".join(t[0] for t in letters[i:i + len(word)]) == word:
                return True
    return len(word) >= 3 and any(t.startswith(word) and len(t) > len(word) + 1 for t in tokens)


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
            if c.dim == "count" and c.noun and s.noun and not _same_slot(c, s):
                return "none"
            return "match"
        return rel if _same_slot(c, s) else "none"
    if c.kind == "date":
        return _dates_relation(c.value, s.value)  # type: ignore[arg-type]
    if c.kind in ("time", "ordinal", "weekday"):
        return "match" if c.value == s.value else "conflict"
    if c.kind == "entity":
        if c.dim == "identifier" and s.dim == "identifier":
            cn, sn = str(c.value).split(" ")[0], str(s.value).split(" ")[0]
            if c.value == s.value:
                return "match"
            return "conflict" if cn == sn and cn else "none"
        return "match" if c.value == s.value else "none"
    return "none"


def _coverage(claim: Analysis, span: Analysis, exclude: set[int], word_sim: WordSim | None,
              given: set[int] | frozenset[int] = frozenset()) -> tuple[float, list[str]]:
    """Share of the claim's content words (minus ``exclude`` token indices) that the span has.
    ``given`` token indices count as covered (names the source mentions in another sentence,
    which the span refers back to with a pronoun)."""
    span_words = [w for _, w in span.content] + [t.low for t in span.tokens if t.kind == "word"]
    span_set = set(span_words)
    words = [(i, w) for i, w in claim.content if i not in exclude]
    if not words:
        return 0.5, []
    covered = 0.0
    uncovered: list[str] = []
    for i, w in words:
        if i in given or w in span_set or any(words_match(w, s) for s in span_set if len(s) > 2):
            covered += 1
            continue
        if word_sim is not None:
            best = max((word_sim(w, s) for _, s in span.content), default=0.0)
            if best >= 1.0:
                covered += 1
                continue
            if best > 0:
                covered += best
                if best < 0.5:
                    uncovered.append(w)
                continue
        uncovered.append(w)
    return covered / len(words), uncovered


def _conf(base: float, slope: float, cov: float) -> float:
    return round(max(0.0, min(0.99, base + slope * cov)), 4)


_PRONOUN_STARTS = ("it ", "its ", "it's ", "they ", "their ", "he ", "his ", "she ", "her ", "this ", "these ",
                   "that ", "those ", "the latter ", "the former ")


def refers_back(sentence: str) -> bool:
    """True when a sentence opens with a pronoun that refers to the previous sentence."""
    return sentence.strip().lower().replace("’", "'").startswith(_PRONOUN_STARTS)


def align(claim: Analysis, span: Analysis, doc: Analysis | None = None,
          word_sim: WordSim | None = None, context: Analysis | None = None) -> Alignment:
    """Align a claim with one source sentence (``span``) of a source (``doc``).

    Returns conflicts (with a confidence each; see the verifier module for how the
    contradiction threshold applies), the strong claim facts absent from the whole
    source, the matched fact pairs, and the claim's content-word coverage by the span.
    """
    doc = doc or span
    conflicts: list[Conflict] = []
    missing: list[Fact] = []
    matched: list[tuple[Fact, Fact]] = []
    doc_text_low = doc.text.lower()
    span_text_low = span.text.lower()
    fact_tokens = {i for f in claim.facts if f.kind != "entity" for i in f.tokens}
    given: set[int] = set()
    if context is not None:  # the sentence a pronoun of the span refers to
        given |= {i for i, w in claim.content if w in context.words or stem(w) in context.words}
    base_cov, uncovered = _coverage(claim, span, fact_tokens, word_sim, given)
    # context coverage (for conflict confidence): without the words whose meaning may flip
    ctx_cov, _ = _coverage(claim, span, fact_tokens | claim.polar, word_sim, given)

    for cf in claim.facts:
        # 1. is it matched in the span, or anywhere in the source?
        span_rel = [(_fact_relation(cf, sf), sf) for sf in span.facts]
        hit = next((sf for rel, sf in span_rel if rel == "match" and _exact(cf, sf)), None)
        if hit is None and not any(rel == "unit" for rel, _ in span_rel):
            hit = next((sf for rel, sf in span_rel if rel == "match"), None)
        if cf.kind == "entity" and cf.dim != "identifier" and hit is None and _entity_present(cf, span.words, span_text_low):
            hit = cf
        if hit is not None:
            matched.append((cf, hit))
            continue
        in_doc = any(_fact_relation(cf, df) == "match" and _exact(cf, df) for df in doc.facts) or (
            cf.kind == "entity" and _entity_present(cf, doc.words, doc_text_low))
        if cf.kind == "entity" and cf.dim == "identifier" and not in_doc:
            in_doc = _entity_present(cf, doc.words, doc_text_low)
        # 2. conflicts against the span
        cov_wo = ctx_cov
        if cf.kind == "entity":
            # the relation (non-name words) counts double: "X was born in A" vs "X received a prize
            # in B" shares the name X but not what is said about it
            excl = fact_tokens | claim.polar | set(cf.tokens)
            cov_all, _ = _coverage(claim, span, excl, word_sim, given)
            cov_rel, _ = _coverage(claim, span, excl | claim.entity_tokens, word_sim, given)
            n_all = len([1 for i, _ in claim.content if i not in excl])
            n_rel = len([1 for i, _ in claim.content if i not in excl | claim.entity_tokens])
            cov_wo = (cov_all * n_all + cov_rel * n_rel) / (n_all + n_rel) if n_all + n_rel else 0.5
        for rel, sf in span_rel:
            if rel == "unit":
                conflicts.append(Conflict("unit", cf.describe(), sf.describe(), _conf(0.75, 0.2, ctx_cov),
                                          f"unit mismatch: claim says {cf.describe()}, source says {sf.describe()}"))
            elif rel == "conflict":
                kind = {"quantity": "number", "date": "date", "time": "time", "ordinal": "ordinal",
                        "weekday": "date", "entity": "entity"}[cf.kind]
                if cf.kind == "quantity":
                    strong = cf.dim in _STRONG_DIMS or (cf.dim == "count" and bool(cf.noun) and bool(sf.noun))
                    conf = _conf(0.7, 0.25, ctx_cov) if strong else _conf(0.35, 0.55, ctx_cov)
                elif cf.kind == "entity":
                    conf = _conf(0.8, 0.15, ctx_cov)
                elif cf.kind in ("ordinal", "weekday"):
                    conf = _conf(0.3, 0.5, ctx_cov)
                else:
                    conf = _conf(0.35, 0.55, ctx_cov)
                conflicts.append(Conflict(kind, cf.describe(), sf.describe(), conf,
                                          f"{kind} mismatch: claim says {cf.describe()}, source says {sf.describe()}"))
        if cf.kind == "entity" and cf.dim != "identifier" and not (set(cf.tokens) & given):
            sub = _entity_substitute(claim, span, cf, guess=not cf.weak)
            if sub is not None:
                sf, shares_name = sub
                conf = _conf(0.8, 0.15, cov_wo) if shares_name else _conf(0.25, 0.6, cov_wo)
                if in_doc:
                    conf = min(conf, 0.65)  # the sources name it elsewhere: doubtful, not a contradiction
                conflicts.append(Conflict("entity", cf.text, sf.text, conf,
                                          f"entity mismatch: claim says {cf.text}, source says {sf.text}"))
        if not in_doc and not cf.weak:
            missing.append(cf)

    # 3. negation polarity, antonyms, quantifiers (only on an otherwise matching sentence)
    if (claim.polarity % 2) != (span.polarity % 2):
        cue_c = ", ".join(claim.negation_cues) or "no negation"
        cue_s = ", ".join(span.negation_cues) or "no negation"
        conflicts.append(Conflict("negation", cue_c, cue_s, _conf(0.3, 0.6, ctx_cov),
                                  f"negation mismatch: claim has {_quote(cue_c)}, source has {_quote(cue_s)}"))
    for group, (side, word) in claim.directions.items():
        other = span.directions.get(group)
        if other is None or other[0] == side:
            continue
        if _swapped(claim, span):
            continue  # "A is less than B" = "B is more than A"
        conflicts.append(Conflict("antonym", word, other[1], _conf(0.2, 0.6, ctx_cov),
                                  f"opposite meaning: claim says {_quote(word)}, source says {_quote(other[1])}"))
    for group, (side, word) in claim.directions.items():
        other = span.directions.get(group)
        if other is not None and other[0] == side and _swapped(claim, span):
            conflicts.append(Conflict("comparative", word, other[1], _conf(0.2, 0.6, ctx_cov),
                                      f"comparison reversed: claim and source say {_quote(word)} "
                                      f"of opposite things"))
    if claim.universal and span.partial and not span.universal:
        conflicts.append(Conflict("quantifier", claim.universal[0], span.partial[0], _conf(0.2, 0.6, ctx_cov),
                                  f"quantifier mismatch: claim says {_quote(claim.universal[0])}, "
                                  f"source says {_quote(span.partial[0])}"))
    n_words = len([1 for i, _ in claim.content if i not in fact_tokens])
    # values (numbers, dates, times, identifiers) -- names are already content words
    strong = [f for f in claim.facts if not f.weak and (f.kind != "entity" or f.dim == "identifier")]
    hits = sum(1 for cf, sf in matched if cf in strong and _exact(cf, sf))
    total = n_words + FACT_WEIGHT * len(strong)
    support_cov = (base_cov * n_words + FACT_WEIGHT * hits) / total if total else base_cov
    return Alignment(conflicts, missing, matched, base_cov, uncovered, support_cov)


def _swapped(claim: Analysis, span: Analysis) -> bool:
    """The two sides of a "than" comparison are exchanged between claim and span."""
    if not (claim.than_after and span.than_after):
        return False
    ca = claim.than_after - span.than_after
    sa = span.than_after - claim.than_after
    return bool(ca) and bool(sa) and ca <= span.than_before and sa <= claim.than_before


def _quote(s: str) -> str:
    return f"'{s}'"


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _entity_substitute(claim: Analysis, span: Analysis, cf: Fact, guess: bool = True) -> tuple[Fact, bool] | None:
    """A span entity standing where the claim has ``cf``: (fact, shares part of a name)."""
    claim_words = claim.words
    candidates = [sf for sf in span.facts if sf.kind == "entity" and sf.dim == "name"
                  and sf.value not in claim_words and stem(str(sf.value)) not in claim_words]
    # a capitalised word opening the span may be a name too ("Canberra is the capital ...")
    for k, t in enumerate(span.tokens):
        if guess and t.initial and t.is_cap and t.low not in STOPWORDS and t.low not in _FILLER \
                and t.low not in claim_words and stem(t.low) not in claim_words \
                and not any(k in f.tokens for f in span.facts) and k not in span.polar:
            candidates.append(Fact("entity", t.low, t.text, t.start, t.end, dim="name", tokens=(k,)))
    if not candidates:
        return None
    # same multi-word name with one part changed: "Pierre Curie" vs "Marie Curie"
    c_phrase = {str(claim.tokens[i].low) for i in cf.tokens}
    for sf in candidates:
        s_phrase = {span.tokens[i].low for i in sf.tokens}
        if len(c_phrase) > 1 and len(s_phrase) > 1 and (c_phrase & s_phrase):
            return sf, True
    c_low = str(cf.value)
    # not a substitute: part of a name the claim also uses ("Mediterranean Sea" for
    # "the Mediterranean"), or a derived form ("Martian" for "Mars", "Canadian" for "Canada")
    claim_names = {claim.tokens[i].low for i in claim.entity_tokens}
    candidates = [sf for sf in candidates
                  if not ({span.tokens[i].low for i in sf.tokens} & claim_names)
                  and not _common_prefix(c_low, str(sf.value)) >= 3
                  and not is_alias(cf.text, sf.text)]
    if not candidates:
        return None
    # the aligned position in a word-level diff
    a = [t.low for t in claim.tokens]
    b = [t.low for t in span.tokens]
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    c_idx = set(cf.tokens)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "replace" and c_idx & set(range(i1, i2)):
            for sf in candidates:
                if set(sf.tokens) & set(range(j1, j2)):
                    return sf, False
    if len(candidates) == 1:
        return candidates[0], False
    # the nearest entity after the same preceding content word
    prev_words = [claim.tokens[k].low for k in range(max(0, min(c_idx) - 3), min(c_idx))
                  if claim.tokens[k].kind == "word" and claim.tokens[k].low not in STOPWORDS]
    if prev_words:
        for sf in candidates:
            start = min(sf.tokens)
            window = [span.tokens[k].low for k in range(max(0, start - 4), start) if span.tokens[k].kind == "word"]
            if any(words_match(p, w) for p in prev_words for w in window):
                return sf, False
    return None
