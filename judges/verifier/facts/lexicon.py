"""Word tables (stopwords, negation, direction and quantifier words, months, number words, units,
currencies, bound phrases) and a light stemmer."""

from __future__ import annotations

import threading
from functools import lru_cache

import snowballstemmer

# A Snowball stemmer keeps the word it is stemming in its own attributes, so one instance shared by
# a web worker's threads mixes their words up: under load a stem came back as another request's
# word, or raised IndexError (a 500 in bench/load.py). Each thread gets its own.
_SNOWBALL = threading.local()

STOPWORDS = frozenset(
    """
a an the this that these those there here it its it's they them their theirs he him his she her hers
we us our ours you your yours i me my mine one's who whom whose which what when where why how
is are was were be been being am do does did done doing have has had having will would shall should
can could may might must ought to of in on at by for from with into onto upon over under about as
than then so such too very just also only even still yet already both either each and or but if
because while although though whereas unless until till since after before during per via
within without through throughout across along among amongst between behind beyond toward towards
up down out off again further once any some many much more most other another own same few less
least lot lots several all every whole s t don't doesn't just like get gets got getting
been make makes made use used using new now one ones around near also well may might able
making take takes took taken taking need needs needed
""".split()
) | {"its", "it’s", "'s"}

# Words that never count as content (grammar, discourse, hedges)
_FILLER = frozenset(
    """
however therefore thus hence indeed really actually usually generally typically often sometimes
always never also still overall currently total approximately roughly nearly almost about around
include includes including included e.g i.e etc
""".split()
)

_NEGATIONS = frozenset(
    """
not no never none nothing nobody nowhere neither nor without cannot can't won't don't doesn't didn't
isn't aren't wasn't weren't hasn't haven't hadn't shouldn't mustn't wouldn't couldn't mightn't needn't
ain't n't
""".split()
)

# Words that state the negative of a condition: they carry negative polarity, so
# "closed" vs "open", "missing" vs "not found" line up as a polarity (dis)agreement.
_NEGATIVE_STATES = frozenset(
    """
closed shut missing absent lack lacks lacking lacked unavailable unable fail fails failed failing
prohibited forbidden banned disallowed disabled disable disables excluded excludes exclude denied refused
rejected exempt removed discontinued withdrawn waived
impossible illegal unsupported unsafe invalid incorrect false
""".split()
)
#: A negative state and the words that name the same state or the event that brings it about
#: without a negation ("shut" and "the closure of"; "banned" and "a ban on"): the other text
#: states the claim's negative then, not its opposite (negations.negations).
STATES_ALIKE = {
    cue: frozenset(words)
    for line in (
        "closed shut closure closures shutdown shutdowns ceased",
        "banned ban bans prohibited prohibition forbidden",
        "removed removal",
        "rejected rejection",
        "denied denial",
        "withdrawn withdrawal",
        "excluded exclusion exclusions",
        "failed fail fails failure failures",
    )
    for words in [line.split()]
    for cue in words
}
_POSITIVE_STATES = frozenset(
    """
open opened available allowed permitted enabled included accepted supported possible legal
safe valid correct true allows permits
""".split()
)

# Antonymic direction groups: word -> (group, side)
_DIRECTION_WORDS: dict[str, tuple[str, int]] = {}


def _dir(group: str, side: int, words: str) -> None:
    for w in words.split():
        _DIRECTION_WORDS[w] = (group, side)


_dir(
    "magnitude",
    +1,
    """increase increases increased increasing rise rises rose risen rising grow grows grew
grown growing growth gain gains gained climb climbs climbed jump jumped surge surged raise raises raised
boost boosts boosted more higher highest greater greatest larger largest bigger biggest above exceed
exceeds exceeded maximum""",
)
_dir(
    "magnitude",
    -1,
    """decrease decreases decreased decreasing fall falls fell fallen falling drop drops
dropped dropping decline declines declined declining shrink shrinks shrank shrunk reduce reduces reduced
reducing reduction lower lowers lowered lowest less fewer fewest smaller smallest below minimum least
plunge plunged dip dipped cut cuts""",
)
_dir("speed", +1, "fast faster fastest quick quicker quickest rapid rapidly quickly")
_dir("speed", -1, "slow slower slowest slowly")
_dir("weight", +1, "heavier heaviest")
_dir("weight", -1, "lighter lightest")
_dir("length", +1, "longer longest taller tallest wider widest deeper deepest")
_dir("length", -1, "shorter shortest narrower narrowest shallower shallowest")
_dir("order", +1, "after later latest afterwards subsequently postdates postdated")
_dir("order", -1, "before earlier earliest prior previously beforehand predates predated precedes preceded")
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
_dir("billing", +1, "paid charged")
_dir("billing", -1, "free")

_NON_NEGATING = {
    ("not", "only"),
    ("no", "doubt"),
    ("no", "matter"),
    ("not", "just"),
    ("never", "mind"),
    ("no", "sooner"),
    # "never stop growing" says "keep growing"
    ("never", "stop"),
    ("never", "stops"),
    ("never", "ceases"),
}

_UNIVERSAL = frozenset("all every each always everyone everybody everything everywhere entire".split())
_PARTIAL = frozenset(
    """some most many several few sometimes often usually occasionally rarely seldom
partly partially certain majority minority only except unless excluding""".split()
)
# Where a share settles a quantifier: "most" is over half, "a minority" under half, "all" the whole.
_OVER_HALF = frozenset("most mostly majority".split())
_UNDER_HALF = frozenset("minority".split())
# How often or how many, on one scale: a claim at one end against a source at the other
# ("a common reaction, affecting most recipients" / "in rare cases") is a quantifier mismatch.
_FREQUENT = frozenset(
    "most mostly many often usually majority common commonly frequent frequently typically normally regularly".split()
)
_INFREQUENT = frozenset("few rare rarely seldom occasionally minority uncommon infrequent infrequently".split())

_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sep": 9,
    "sept": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_WEEKDAYS = {
    "monday": 1,
    "tuesday": 2,
    "wednesday": 3,
    "thursday": 4,
    "friday": 5,
    "saturday": 6,
    "sunday": 7,
    "mondays": 1,
    "tuesdays": 2,
    "wednesdays": 3,
    "thursdays": 4,
    "fridays": 5,
    "saturdays": 6,
    "sundays": 7,
}

#: The names of the days of the week (a "date" conflict between two of them is no date of record).
WEEKDAY_NAMES = frozenset(_WEEKDAYS)

_UNITS_1 = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SHORT_SCALES = {"k": 1e3, "mn": 1e6, "bn": 1e9}
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "twentieth": 20,
    "hundredth": 100,
    "last": -1,
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
# the micro sign and the Greek mu (what the micro sign folds to, tokens.Token.low)
_u("mass", 1e-9, "µg", "µg μg mcg microgram micrograms microgramme microgrammes")
_u("mass", 1e-6, "mg", "mg milligram milligrams milligramme milligrammes")
_u("mass", 1e-3, "g", "g gram grams gramme grammes")
_u("mass", 1.0, "kg", "kg kgs kilogram kilograms kilo kilos")
_u("mass", 1e3, "t", "tonne tonnes ton tons")
_u("mass", 0.45359237, "lb", "lb lbs pound pounds")
_u("mass", 0.028349523, "oz", "oz ounce ounces")
_u("area", 1e4, "ha", "ha hectare hectares")
_u("area", 4046.8564224, "acre", "acre acres")
_u("area", 1e6, "km²", "km2")
_u("volume", 1e-3, "ml", "ml millilitre millilitres milliliter milliliters")
_u("volume", 1.0, "l", "l litre litres liter liters")
_u("volume", 3.785411784, "gal", "gallon gallons gal")
# kitchen and dosing measures (US customary): "5 teaspoons" is about 25 ml, not "5 ml"
_u("volume", 4.92892159e-3, "tsp", "tsp teaspoon teaspoons teaspoonful teaspoonfuls")
_u("volume", 1.478676478e-2, "tbsp", "tbsp tablespoon tablespoons tablespoonful tablespoonfuls")
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
_u("data", 1024.0**2, "MiB", "mib")
_u("data", 1024.0**3, "GiB", "gib")
_u("data", 1024.0**4, "TiB", "tib")
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
_CURRENCY_CODES = {
    "usd": "USD",
    "eur": "EUR",
    "gbp": "GBP",
    "jpy": "JPY",
    "chf": "CHF",
    "cad": "CAD",
    "aud": "AUD",
    "inr": "INR",
    "cny": "CNY",
}
_CURRENCY_WORDS = {
    "dollar": "USD",
    "dollars": "USD",
    "euro": "EUR",
    "euros": "EUR",
    "yen": "JPY",
    "cent": "USD_CENT",
    "cents": "USD_CENT",
    "rupee": "INR",
    "rupees": "INR",
    "francs": "CHF",
    "franc": "CHF",
}

_ABBREVIATED_NOUNS = {
    "req": "request",
    "reqs": "request",
    "msg": "message",
    "msgs": "message",
    "ppl": "people",
    "pts": "point",
    "pt": "point",
    "emp": "employee",
}

_BOUNDS = [  # (phrase, bound) -- longest first
    ("no more than", "le"),
    ("no less than", "ge"),
    ("no fewer than", "ge"),
    ("not more than", "le"),
    ("not less than", "ge"),
    ("a minimum of", "ge"),
    ("a maximum of", "le"),
    ("at least", "ge"),
    ("at most", "le"),
    ("more expensive than", "gt"),
    ("less expensive than", "lt"),
    ("more than", "gt"),
    ("greater than", "gt"),
    # a comparative before a number bounds it as "more than" does: "taller than 300 metres"
    *(
        (f"{word} than", "gt")
        for word in "taller longer higher larger bigger heavier older wider deeper costlier".split()
    ),
    *((f"{word} than", "lt") for word in "shorter lower smaller lighter younger narrower shallower cheaper".split()),
    ("less than", "lt"),
    ("fewer than", "lt"),
    ("up to", "le"),
    ("as many as", "le"),
    ("as much as", "le"),
    ("minimum of", "ge"),
    ("maximum of", "le"),
    ("limited to", "le"),
    ("capped at", "le"),
    ("slightly more than", "gt"),
    ("slightly less than", "lt"),
    ("a little more than", "gt"),
    ("a little less than", "lt"),
    ("a little over", "gt"),
    ("a little under", "lt"),
    ("slightly over", "gt"),
    ("slightly under", "lt"),
    ("just over", "gt"),
    ("just under", "lt"),
    ("just above", "gt"),
    ("just below", "lt"),
    ("close to", "approx"),
    ("in excess of", "gt"),
    ("over", "gt"),
    ("above", "gt"),
    ("exceeding", "gt"),
    ("under", "lt"),
    ("below", "lt"),
    ("about", "approx"),
    ("approximately", "approx"),
    ("approx", "approx"),
    ("around", "approx"),
    ("roughly", "approx"),
    ("nearly", "approx"),
    ("almost", "approx"),
    ("circa", "approx"),
    ("some", "approx"),
    ("~", "approx"),
    ("estimated", "approx"),
    ("an estimated", "approx"),
    ("maximum", "le"),
    ("minimum", "ge"),
    ("max", "le"),
    ("min", "ge"),
]

_DIMENSION_ADJECTIVES = frozenset(
    """long tall high wide deep thick old away apart ago later long
across in-length""".split()
)

#: Negation carried by an affix of a hyphenated word: "gluten-free" is "without gluten",
#: "non-refundable" is "not refundable" (the word's stem is the content the source must cover).
NEGATING_SUFFIX = "-free"
NEGATING_PREFIX = "non-"


def negated_stem(word: str) -> str | None:
    """The word an affix negates ("gluten" of "gluten-free", "refundable" of "non-refundable")."""
    if word.endswith(NEGATING_SUFFIX) and len(word) > len(NEGATING_SUFFIX) + 1:
        return word[: -len(NEGATING_SUFFIX)]
    if word.startswith(NEGATING_PREFIX) and len(word) > len(NEGATING_PREFIX) + 1:
        return word[len(NEGATING_PREFIX) :]
    return None


#: Prefixes that negate an adjective or participle ("ineffective", "unlimited", "discontinued"),
#: the endings such a word has, and the words that only look so ("discovered" is no "not covered").
_NOT_PREFIXES = ("un", "in", "im", "il", "ir", "dis")
_ADJECTIVE_ENDINGS = ("ive", "able", "ible", "al", "ful", "ent", "ant", "ate", "ed", "ous", "ic", "ar", "ure")
_NOT_NEGATED = frozenset(
    "discovered disclosed dismissed installed informed invaluable inflammable impressed imported "
    "interested invented intended invested impaired unlike unless".split()
)


def prefix_negated(word: str) -> str | None:
    """The word a negating prefix denies ("effective" of "ineffective"), where the rest is an
    adjective or a participle; whether it negates is for the other text to say (it must speak of
    "effective": analysis.scoped_negations)."""
    if word in _NOT_NEGATED or word in _NEGATIVE_STATES or "-" in word:
        return None
    for p in _NOT_PREFIXES:
        rest = word[len(p) :]
        if word.startswith(p) and len(rest) >= 4 and rest.endswith(_ADJECTIVE_ENDINGS):
            return rest
    return None


_YEAR_PREPOSITIONS = frozenset(
    "in since by until till from of during before after circa to the early late mid end start beginning around".split()
)

_IRREGULAR = {
    "won": "win",
    "beaten": "beat",
    "grew": "grow",
    "grown": "grow",
    "fell": "fall",
    "fallen": "fall",
    "rose": "rise",
    "risen": "rise",
    "began": "begin",
    "begun": "begin",
    "ran": "run",
    "built": "build",
    "bought": "buy",
    "sold": "sell",
    "made": "make",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "went": "go",
    "gone": "go",
    "held": "hold",
    "born": "born",
    "men": "man",
    "women": "woman",
    "children": "child",
    "people": "person",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "data": "data",
    "media": "medium",
    "lay": "lie",
    "lain": "lie",
    "lies": "lie",
    "wrote": "write",
    "written": "write",
    "found": "find",
    "led": "lead",
    "left": "leave",
    "paid": "pay",
    "shrank": "shrink",
    "shrunk": "shrink",
    "drove": "drive",
    "driven": "drive",
    "flew": "fly",
    "flown": "fly",
    "spoke": "speak",
    "spoken": "speak",
    "chose": "choose",
    "chosen": "choose",
    "kept": "keep",
    "met": "meet",
    "sent": "send",
    "spent": "spend",
    "lost": "lose",
    "brought": "bring",
    "thought": "think",
    "taught": "teach",
    "caught": "catch",
    "fought": "fight",
    "sought": "seek",
    "known": "know",
    "knew": "know",
    "shown": "show",
    "seen": "see",
    "saw": "see",
    "became": "become",
    "came": "come",
    "says": "say",
    "said": "say",
    "has": "have",
    "had": "have",
}


def has_s_ending(word: str) -> bool:
    """Whether a word ends in the "-s" of a plural or a third person ("requests", "runs"), not one
    of its own ("class", "status", "analysis")."""
    return word.endswith("s") and not word.endswith(("ss", "us", "is"))


@lru_cache(maxsize=65536)
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
    for suffix, repl in (
        ("ies", "y"),
        ("ied", "y"),
        ("sses", "ss"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("xes", "x"),
        ("ing", ""),
        ("ed", ""),
        ("es", "e"),
        ("s", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and not has_s_ending(w):
                return w
            base = w[: len(w) - len(suffix)] + repl
            if suffix in ("ing", "ed") and len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # stopped -> stop
            return base
    return w


#: What is paid, stemmed: a negation of one of these ("no fee", "does not charge", "without
#: paying") says what the billing direction's "free" says (align._negations)
COST_WORDS = frozenset(
    stem(w) for w in "charge charged charges charging fee fees cost costs pay pays paid paying payment price".split()
)
#: Verbs of an end, stemmed: a clock time after one may be a start plus a duration (implied.py).
END_VERBS = frozenset(
    stem(w) for w in "arrive arrives end ends finish finishes land lands reach conclude return".split()
)
#: Words before a date that say something ends then ("runs out in March 2025", "until"), stemmed:
#: a start date plus a length of time may be such a date (implied.py, align._may_be_implied).
END_DATE_WORDS = frozenset(
    stem(w)
    for w in "until till through expire expires expiry end ends runs out due by last deadline valid lasts".split()
)
#: Prepositions (a participle before one describes the noun before it: analysis; a word in "-s"
#: before one is a verb: conjuncts).
PREPOSITIONS = frozenset("to in on at by with from for of up over into under after before during".split())
#: Words of a change, stemmed: a percent after one may be the change between two amounts (implied.py).
CHANGE_WORDS = frozenset(
    stem(w)
    for w in "increase increased rise rose risen grow grew grown fall fell fallen decline declined drop dropped "
    "climb climbed jump jumped gain gained cut reduce reduced growth".split()
)

#: Words a source's word says without their being written, stemmed (align._coverage): a place
#: "closed on Sundays" is one you cannot visit or shop at then; a company "founded in 1998" has
#: been in business, operating, since.
IMPLIED_WORDS = tuple(
    (frozenset(stem(w) for w in cues.split()), frozenset(stem(w) for w in implied.split()))
    for cues, implied in (
        ("open opens opened closed closes opening", "visit shop enter tour attend"),
        ("founded established launched incorporated", "business operating operate operation existence exist"),
    )
) + tuple(
    # words of permission and obligation that say one thing, so that a negation of one bears on
    # the other ("allowed to keep pets" against "Pets are not permitted")
    (frozenset(stem(w) for w in same.split()),) * 2
    for same in (
        "allowed allow allows permitted permit permits",
        "prohibited forbidden banned",
        "required mandatory compulsory obligatory",
        "optional voluntary",
        "eligible qualify qualifies qualified",
    )
)


#: Words that make a claim's sum a difference of two ("saves €100", "€50 more than Starter").
DIFFERENCE_WORDS = frozenset(
    "save saves saving savings cheaper dearer more less extra difference higher lower above below than behind "
    "ahead apart warmer colder hotter longer shorter heavier lighter gap margin".split()
)
#: Words of a claim that speaks of a sum of two values (implied.SUM).
SUM_WORDS = frozenset("total including includes together combined altogether overall plus".split())

#: Words that name one of several groups a value may be given for: a value of "paid accounts"
#: is no rival of one of "free-tier accounts" (align._another_group; rivals outside these groups,
#: "postgraduate" and "undergraduates", differ only before a shared ending).
GROUP_WORDS = tuple(
    frozenset(stem(w) for w in words.split())
    for words in (
        "paid free free-tier premium basic standard pro enterprise starter business",
        "adult adults child children kid kids senior seniors student students infant infants",
        "domestic international",
        "member members non-member non-members guest guests",
        "peak off-peak",
        "summer winter spring autumn",
    )
)


@lru_cache(maxsize=65536)
def porter(word: str) -> str:
    """The Snowball (Porter2) stem: folds derivations the light :func:`stem` keeps apart
    ("approval"/"approved", "connection"/"connected")."""
    stemmer = getattr(_SNOWBALL, "english", None)
    if stemmer is None:
        stemmer = _SNOWBALL.english = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word.lower().replace("’", "'").removesuffix("'s"))


@lru_cache(maxsize=262144)  # the coverage of every claim word against every span word calls it
def words_match(a: str, b: str) -> bool:
    """Lexical match of two words: same stem (light or Snowball) or a shared prefix of five or more letters."""
    if a == b:
        return True
    sa, sb = stem(a), stem(b)
    if sa == sb or sa + "e" == sb or sb + "e" == sa:
        return True
    if len(a) > 3 and len(b) > 3 and porter(a) == porter(b):
        return True
    n = 0
    for x, y in zip(sa, sb):
        if x != y:
            break
        n += 1
    return n >= 5 or (n >= 4 and n == min(len(sa), len(sb)))


#: Verbs that name the same act, for who did it (roles.py): "Venus beat Serena" is about the same
#: match as "Serena defeated Venus", "James Holt wrote the report" as "authored by Priya Nair".
_SAME_ACTS = (
    ("write", "author", "pen"),
    ("beat", "defeat"),
    ("buy", "acquire", "purchase"),
    ("build", "construct"),
    ("founded", "establish"),  # "founded", not "found": the light stem reads "found" as "find"
)
_ACT_GROUP = {stem(w): g for g, words in enumerate(_SAME_ACTS) for w in words}
_ACT_WORDS = frozenset(w for words in _SAME_ACTS for w in words)


def is_act(word: str) -> bool:
    """Whether the word is one of the verbs above ("beat" is its own past tense)."""
    return word in _ACT_WORDS


def same_act(a: str, b: str) -> bool:
    """Whether two verbs name the same act: the same word (``words_match``) or two of a group above."""
    if words_match(a, b):
        return True
    group = _ACT_GROUP.get(stem(a))
    return group is not None and group == _ACT_GROUP.get(stem(b))
