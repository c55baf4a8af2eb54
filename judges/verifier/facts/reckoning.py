"""Values a claim works out from the sources' values together with its own (docs/verifier.md, "How a
verdict is made", step 2):

* two dates of the claim as far apart as a duration the sources state: "first dose on 1 March
  … second dose on 22 March" against "two doses given 21 days apart" (or "three weeks apart");
* a duration of the claim from a year of its own to a year the sources state: "founded more
  than two decades before 2024" against "founded in 1998"; a claim without a year counts to this
  year or to the sources' last ("in business for more than 25 years");
* an amount that is a rate the sources state times a count of what the rate is per: "$300"
  against "$20 per user" and "15 active users" (the count from the claim or the sources), "400 g
  of rice for eight people" against "50 g per person", "at most six virtual machines" against "3
  virtual machines per region" and "two regions";
* an amount of a recipe or an order scaled to another number of people: "400 g of rice for eight
  people" against "Risotto (serves 4): 200 g arborio rice";
* an amount over a period the claim names, from a rate per unit of time the sources state: "works
  a full year accrues 18 days of paid leave" against "1.5 days of paid leave for each full month";
* an amount shared out over a count: "averaged roughly 162 km each" against "3,400 km over 21
  stages";
* how many values a list gives: "offered in five frame sizes" against "sizes 50, 52, 54, 56 and
  58 cm";
* a share the sources state of another amount of the claim's: "€10,000 … would earn €300"
  against "pays 3% annual interest";
* an amount and what the sources add to it: "the 512 GB model costs €999" against "starts at
  €899 …; the 512 GB model costs €100 more";
* the step of a list: "spaced four weeks apart" against "at 8, 12 and 16 weeks";
* a clock time an interval leads to: "the third dose is due at 22:00" against "every 8 hours"
  and "first dose given at 06:00";
* a date within a period counted from another: "a return started on 20 March would still be
  inside the window" against "delivered on 5 March; return window: 30 days";
* a percentage that is the ratio of two amounts: "an 80% loan-to-value ratio" against "purchase
  price £250,000, loan amount £200,000".

Like the implied facts (implied.py), these only ever *match* a claim's value: which two values
the arithmetic should join is a guess, so a result that differs is no conflict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date

from .analysis import Analysis
from .compare import _fact_relation, _rounding
from .fact import Fact
from .implied import _DAY, MAX_YEARS, _after, _duration, _ordinal_day
from .lexicon import _UNITS, _YEAR, CHANGE_WORDS, DIFFERENCE_WORDS, stem
from .quantities import INTERVAL, listed

#: How close a product must come to the claim's amount (rounding of a stated rate).
_PRODUCT_TOL = 0.01
#: Nouns of a count that amounts are given for ("for 4 people", "8 servings"), and the verbs that
#: give one without a noun ("serves 4", "feeds 6").
_PORTIONS = frozenset({"person", "serving", "portion", "guest"})
_SERVES = frozenset({"serves", "serve", "serving", "feeds", "feed"})


def _day_number(value: tuple) -> int | None:
    _, m, d = value
    return _ordinal_day(value) if m is not None and d is not None else None


def days_apart(cf: Fact, claim: Analysis, doc: Analysis) -> Fact | None:
    """The duration of ``doc`` that the claim's date ``cf`` and another of its dates are apart by
    (counted either way: "21 days apart" is 1 to 22 March; a count of both ends, 22, also fits)."""
    if cf.kind != "date" or cf.dim or cf.bound != "eq":
        return None
    day = _day_number(cf.date_value)
    if day is None:
        return None
    gaps = {
        abs(day - other)
        for f in claim.facts
        if f is not cf and f.kind == "date" and not f.dim and (other := _day_number(f.date_value)) is not None
    }
    gaps.discard(0)
    for f in doc.facts:
        if f.kind == "quantity" and f.dim == "duration" and not f.per and f.bound in ("eq", "approx"):
            days = f.num_value / _DAY
            if any(abs(days - g) < 1e-6 or abs(days - (g + 1)) < 1e-6 for g in gaps):
                return f
    return None


def years_between(cf: Fact, claim: Analysis, doc: Analysis) -> Fact | None:
    """The years from a year the sources state to a year of the claim, as long as the claim's
    duration says: "founded more than two decades before 2024" against "founded in 1998"."""
    if cf.kind != "quantity" or cf.dim != "duration" or cf.per or cf.unit not in ("year", "decade", "century"):
        return None
    mine = {f.date_value[0] for f in claim.facts if f.kind == "date" and not f.dim and f.date_value[0]}
    theirs = {f.date_value[0] for f in doc.facts if f.kind == "date" and not f.dim and f.date_value[0]}
    ends = sorted(mine)
    if not mine and theirs:
        # "has been in business for more than 25 years": until the sources' last year ("Company
        # profile (updated March 2024): founded in 1998"), else until now
        ends = ([max(theirs)] if len(theirs) > 1 else []) + [date.today().year]
    for a in ends:
        for b in sorted(theirs - mine - {a}):
            n = abs(a - b)
            if 0 < n <= MAX_YEARS:
                span = _duration(n * _YEAR, f"{min(a, b)} to {max(a, b)}", "year", n)
                if _fact_relation(cf, span) == "match":
                    return span
    return None


def _counts(noun: str, an: Analysis) -> list[Fact]:
    """Counts of ``noun`` in ``an`` ("15 active users" for "user", "eight people" for "person")."""
    return [
        f
        for f in an.facts
        if f.kind == "quantity" and f.dim == "count" and f.noun and f.noun[-1] == noun and f.bound in ("eq", "approx")
    ]


def rate_times_count(cf: Fact, claim: Analysis, span: Analysis, doc: Analysis) -> Fact | None:
    """A rate of ``span`` per some noun that, times a count of that noun in the claim or the
    sources, gives the claim's amount ``cf``; for a count of the claim ("for eight people"), the
    rate that gives another of the claim's amounts from it ("400 g" at "50 g per person")."""
    if cf.kind == "quantity" and cf.dim == "count" and cf.noun and not cf.per and cf.num_value > 0:
        hit = _count_per_something(cf, claim, span, doc)
        if hit is not None:
            return hit
    if cf.kind != "quantity" or cf.bound not in ("eq", "approx") or cf.num_value <= 0:
        return None
    if cf.dim == "count":
        if not cf.noun:
            return None
        for rate in span.facts:
            if rate.kind == "quantity" and rate.per not in ("", "duration") and stem(rate.per) == cf.noun[-1]:
                product = rate.num_value * cf.num_value
                if any(
                    f.dim == rate.dim and abs(product - _base(f)) <= _PRODUCT_TOL * _base(f)
                    for f in claim.facts
                    # an entity's value is its name: only a quantity has an amount to compare
                    if f is not cf and f.kind == "quantity" and _base(f) > 0
                ):
                    return rate
        return None
    # a claim's "per month" may be the rate's second "per" ("$20 per user per month")
    if cf.per not in ("", "duration"):
        return None
    for rate in span.facts:
        if rate.kind != "quantity" or rate.dim != cf.dim or rate.per in ("", "duration") or rate.bound != "eq":
            continue
        if _times_a_count(rate, _base(cf), claim, doc):
            return rate
    return None


def _times_a_count(rate: Fact, amount: float, claim: Analysis, doc: Analysis) -> bool:
    """Whether ``rate`` times a count of what it is per, in the claim or the sources, is ``amount``
    ("$20 per user" and "15 active users" for $300)."""
    noun = stem(rate.per)
    return any(
        abs(rate.num_value * count.num_value - amount) <= _PRODUCT_TOL * abs(amount)
        for count in _counts(noun, claim) + _counts(noun, doc)
    )


def _count_per_something(cf: Fact, claim: Analysis, span: Analysis, doc: Analysis) -> Fact | None:
    """A count of the claim's noun that ``span`` gives per something, times the number of those:
    "at most six virtual machines in total" against "limited to 3 virtual machines per region"
    and "available in two regions" (a limit times a count is the same kind of limit)."""
    for rate in span.facts:
        if (
            rate.kind != "quantity"
            or rate.dim != "count"
            or rate.per in ("", "duration")
            or rate.noun[-1:] != cf.noun[-1:]
        ):
            continue
        if rate.bound != cf.bound and not (rate.bound == "eq" and cf.bound == "approx"):
            continue
        if _times_a_count(rate, cf.num_value, claim, doc):
            return rate
    return None


def _portions(an: Analysis) -> list[Fact]:
    """Counts of ``an`` that say how many the amounts beside them are for: "eight people",
    "4 servings", "serves 4"."""
    out = []
    for f in an.facts:
        if f.kind != "quantity" or f.dim != "count" or f.bound != "eq" or f.num_value <= 0 or not f.tokens:
            continue
        before = an.tokens[min(f.tokens) - 1].low if min(f.tokens) > 0 else ""
        if _PORTIONS.intersection(f.noun) or (not f.noun and before in _SERVES):
            out.append(f)
    for f in an.facts:  # "Serves 4." opening a sentence reads as a name with a number
        if f.kind == "entity" and f.dim == "identifier" and len(f.tokens) == 2:
            verb, number = (an.tokens[k] for k in f.tokens)
            if verb.low in _SERVES and number.kind == "num" and number.text.isdigit() and int(number.text) > 0:
                out.append(Fact("quantity", float(number.text), number.text, number.start, number.end, dim="count"))
    return out


def _amounts_alike(a: Fact, b: Fact) -> bool:
    """Two amounts of one kind: a mass and a mass, a count of eggs and a count of eggs."""
    if a.kind != "quantity" or b.kind != "quantity" or a.dim != b.dim or a.per or b.per:
        return False
    return a.dim != "count" or (bool(a.noun) and a.noun[-1:] == b.noun[-1:])


def scaled(cf: Fact, claim: Analysis, span: Analysis, doc: Analysis) -> Fact | None:
    """An amount of ``span`` given for N people that, scaled to the claim's number of people,
    is the claim's amount ``cf``; for the claim's number of people itself, the amount that
    scales to another of the claim's amounts ("400 g … for eight people" against "serves 4:
    200 g rice")."""
    if cf.kind != "quantity" or cf.bound not in ("eq", "approx") or cf.num_value <= 0:
        return None
    mine = _portions(claim)
    theirs = _portions(span) or _portions(doc)  # "Serves 4. Ingredients: 400 g spaghetti, …"
    if not mine or not theirs:
        return None
    if cf in mine:
        amounts = [f for f in claim.facts if f is not cf and f not in mine]
        people = [cf]
    else:
        amounts = [cf]
        people = mine
    for m in people:
        for n in theirs:
            ratio = m.num_value / n.num_value
            if ratio == 1:
                continue
            for a in amounts:
                for sf in span.facts:
                    if sf is n or sf in theirs or not _amounts_alike(a, sf):
                        continue
                    if abs(sf.num_value * ratio - a.num_value) <= _PRODUCT_TOL * a.num_value:
                        return sf
    return None


def _base(cf: Fact) -> float:
    """The claim's amount: a rate per month ("$300 per month") as the amount written (its value is
    per second); a scaled amount ("$1.5 million per month") then fails to match, which is safe."""
    return float(cf.raw) if cf.per == "duration" and cf.raw is not None else cf.num_value


#: How a claim names one period that an amount of it is over ("works a full year accrues 18 days").
_PERIODS = {
    "year": "year",
    "annually": "year",
    "yearly": "year",
    "month": "month",
    "monthly": "month",
    "week": "week",
    "weekly": "week",
    "day": "day",
    "daily": "day",
}
_ONE = frozenset("a one full whole each every per an entire".split())


def over_a_period(cf: Fact, claim: Analysis, span: Analysis) -> Fact | None:
    """The rate per unit of time of ``span`` that, over the one period the claim names ("a full
    year", "annually"), gives the claim's amount ``cf``."""
    if cf.kind != "quantity" or cf.per or cf.bound not in ("eq", "approx") or cf.num_value <= 0:
        return None
    toks = claim.tokens
    periods = {
        _PERIODS[t.low]
        for k, t in enumerate(toks)
        if t.low in _PERIODS
        and (t.low.endswith("ly") or (k > 0 and toks[k - 1].low in _ONE))
        and not any(k in f.tokens for f in claim.facts)
    }
    if len(periods) != 1:
        return None
    seconds = _UNITS[periods.pop()][1]
    for rate in span.facts:
        if rate.kind == "quantity" and rate.per == "duration" and rate.dim == cf.dim and rate.bound == "eq":
            if abs(rate.num_value * seconds - cf.num_value) <= _PRODUCT_TOL * cf.num_value:
                return rate
    return None


#: How far a worked-out value may be from a claim's "about" value, relative to it.
_ABOUT = 0.05


def _is_about(value: float, cf: Fact) -> bool:
    """Whether a worked-out ``value`` is the claim's amount as written: to half a unit of its last
    digit ("162 km" for 161.9 km; "€300" is not 280), or within 5 % for an "about" amount."""
    target = _base(cf)
    if target <= 0 or value <= 0:
        return False
    tol = max(_rounding(cf), 0.005) if cf.bound == "eq" else _ABOUT if cf.bound == "approx" else -1.0
    return abs(value - target) <= tol * target


#: Words of a claim that share an amount out over what it is for ("162 km each", "averaged").
_EACH = frozenset("each apiece average averaged averages averaging".split())


def per_item(cf: Fact, claim: Analysis, span: Analysis) -> Fact | None:
    """An amount of ``span`` that, shared out over a count of ``span``, is the claim's amount
    ``cf`` for each: "averaged roughly 162 km each" against "3,400 km over 21 stages"; a claim's
    "per stage" names the count's noun."""
    if cf.kind != "quantity" or cf.per == "duration" or cf.dim == "percent" or cf.num_value <= 0:
        return None
    if not cf.per and not any(t.low in _EACH for t in claim.tokens):
        return None
    alike = replace(cf, per="")
    for count in span.facts:
        if count.kind != "quantity" or count.dim != "count" or not count.noun or count.bound != "eq":
            continue
        if count.num_value < 2 or (cf.per and stem(cf.per) != count.noun[-1]):
            continue
        for total in span.facts:
            if total is not count and _amounts_alike(alike, total) and _is_about(total.num_value / count.num_value, cf):
                return total
    return None


def _lists(span: Analysis, names: bool = False) -> list[list[Fact]]:
    """The lists of values ``span`` gives ("sizes 50, 52, 54, 56 and 58 cm"), or of names ("by
    Anderl Heckmair, Ludwig Vörg, Heinrich Harrer and Fritz Kasparek"), each in order."""
    key = ("lists", names)
    if key not in span.memo:
        if names:  # a name of two words is one fact a word: one a name
            items = list(
                {f.tokens: f for f in span.facts if f.kind == "entity" and f.dim == "name" and f.tokens}.values()
            )
        else:
            items = [f for f in span.facts if f.kind == "quantity" and f.tokens and not f.per]
        found: list[list[Fact]] = []
        for f in sorted(items, key=lambda f: min(f.tokens)):
            if found and listed(found[-1][-1], f, span.tokens):
                found[-1].append(f)
            else:
                found.append([f])
        span.memo[key] = found
    return span.memo[key]  # type: ignore[return-value]


def listed_count(cf: Fact, span: Analysis) -> Fact | None:
    """A list of as many values in ``span`` as the claim's count ``cf`` says there are: "offered
    in five frame sizes" against "available in sizes 50, 52, 54, 56 and 58 cm"; or of names, for a
    count of people ("a four-man team" against "by Anderl Heckmair, Ludwig Vörg, Heinrich Harrer
    and Fritz Kasparek")."""
    if cf.kind != "quantity" or cf.dim != "count" or not cf.noun or cf.bound != "eq" or not 2 <= cf.num_value <= 20:
        return None
    lists = _lists(span) + (_lists(span, names=True) if _PEOPLE.intersection(cf.noun) else [])
    items = next((items for items in lists if len(items) == cf.num_value), None)
    if items is None:
        return None
    # the count, shown as the list it counts
    said = span.text[span.tokens[min(items[0].tokens)].start : span.tokens[max(items[-1].tokens)].end]
    return replace(cf, text=said, tokens=(), implied=True)


#: Count nouns (stemmed) of people, whom a list of names counts.
_PEOPLE = frozenset(stem(w) for w in "man men person people member members player players climber climbers".split())


#: Words of a claim that speak of the step between values ("spaced four weeks apart").
_STEP_WORDS = frozenset("apart intervals interval spaced every".split())


def list_step(cf: Fact, claim: Analysis, span: Analysis) -> Fact | None:
    """A list of three or more values in ``span`` that step by the claim's amount: "spaced four
    weeks apart" against "at 8, 12 and 16 weeks"."""
    if cf.kind != "quantity" or cf.bound not in ("eq", "approx") or not any(t.low in _STEP_WORDS for t in claim.tokens):
        return None
    for items in _lists(span):
        if len(items) < 3 or any(f.dim != cf.dim for f in items):
            continue
        steps = {round(b.num_value - a.num_value, 9) for a, b in zip(items, items[1:])}
        if len(steps) == 1 and _is_about(abs(steps.pop()), replace(cf, per="")):
            return items[-1]
    return None


def share_of_another(cf: Fact, claim: Analysis, span: Analysis) -> Fact | None:
    """A percentage of ``span`` that makes the claim's amount ``cf`` a share of another amount of
    the claim's, or that amount a share of ``cf``: "€10,000 … would earn €300" against "pays 3%
    annual interest"."""
    if cf.kind != "quantity" or cf.dim in ("percent", "count") or cf.per or cf.num_value <= 0:
        return None
    others = [f for f in claim.facts if f is not cf and _amounts_alike(cf, f) and f.bound in ("eq", "approx")]
    for share in span.facts:
        if share.kind != "quantity" or share.dim != "percent" or share.bound != "eq" or not 0 < share.num_value < 100:
            continue
        part = share.num_value / 100
        for other in others:
            if _is_about(other.num_value * part, cf) or _is_about(other.num_value / part, cf):
                return share
    return None


#: Words after an amount that add it to another ("costs €100 more"), and that take it off one.
_ADDED = frozenset("more extra additional".split())
_TAKEN_OFF = frozenset("less cheaper off".split())


def added_on(cf: Fact, span: Analysis) -> Fact | None:
    """An amount of ``span`` with another that ``span`` adds to it or takes off it, which gives
    the claim's amount ``cf``: "costs €999" against "starts at €899 …; the 512 GB model costs €100
    more"."""
    if cf.kind != "quantity" or cf.per or cf.num_value <= 0:
        return None
    amounts = [f for f in span.facts if f.kind == "quantity" and f.tokens and _amounts_alike(cf, f)]
    for step in amounts:
        after = span.tokens[max(step.tokens) + 1 : max(step.tokens) + 3]
        sign = next((1 if t.low in _ADDED else -1 for t in after if t.low in _ADDED | _TAKEN_OFF), 0)
        if not sign:
            continue
        for base in amounts:
            if base is not step and _is_about(base.num_value + sign * step.num_value, cf):
                return base
    return None


def on_a_schedule(cf: Fact, span: Analysis) -> Fact | None:
    """The interval of ``span`` ("every 8 hours") that leads from a clock time of it ("first dose
    at 06:00") to the claim's time ``cf`` in a few steps ("the third dose is due at 22:00")."""
    if cf.kind != "time" or cf.bound != "eq":
        return None
    starts = [f.num_value for f in span.facts if f.kind == "time" and f.bound == "eq" and f.num_value != cf.num_value]
    for every in span.facts:
        if every.kind != "quantity" or every.dim != "duration" or every.per != INTERVAL or every.bound != "eq":
            continue
        minutes = round(every.num_value / 60)
        if not 0 < minutes < _DAY / 60:
            continue
        for start in starts:
            steps, rest = divmod((int(cf.num_value) - int(start)) % (_DAY // 60), minutes)
            if rest == 0 and 0 < steps <= _MAX_STEPS:
                return every
    return None


#: The most steps of an interval a claim's time is worked out by (a day of doses every 4 hours).
_MAX_STEPS = 6

#: Words of a claim that set a date within a period ("still inside the return window").
_WITHIN = frozenset("within inside still before eligible valid covered".split())


def within_a_window(cf: Fact, claim: Analysis, doc: Analysis) -> Fact | None:
    """The length of time of ``doc`` that, counted from a date of it, takes in the claim's date:
    "a return started on 20 March 2024 would still be inside the return window" against
    "Delivered on 5 March 2024. Return window: 30 days from delivery"."""
    if cf.kind != "date" or cf.bound != "eq" or cf.dim or not all(cf.date_value):
        return None
    if not any(t.low in _WITHIN for t in claim.tokens):
        return None
    day = _ordinal_day(cf.date_value)
    starts = [f for f in doc.facts if f.kind == "date" and f.bound == "eq" and not f.dim and all(f.date_value)]
    for length in doc.facts:
        if length.kind != "quantity" or length.dim != "duration" or length.per or length.bound not in ("eq", "le"):
            continue
        for start in starts:
            begin = _ordinal_day(start.date_value)
            ends = [_ordinal_day(e) for e in _after(start.date_value, length)]
            if day is not None and begin is not None and ends and begin <= day <= max(e or 0 for e in ends):
                return length
    return None


def ratio_of_amounts(cf: Fact, claim: Analysis, span: Analysis) -> Fact | None:
    """Two amounts of ``span`` of one kind whose ratio is the claim's percentage: "an 80%
    loan-to-value ratio" against "Purchase price: £250,000 … Loan amount: £200,000". Not for a
    claim of a change or a difference ("fell 80%"), which the implied changes answer."""
    if cf.kind != "quantity" or cf.dim != "percent" or cf.bound not in ("eq", "approx") or not 0 < cf.num_value < 100:
        return None
    if any(stem(t.low) in CHANGE_WORDS or t.low in DIFFERENCE_WORDS for t in claim.tokens):
        return None
    amounts = [f for f in span.facts if f.kind == "quantity" and not f.per and f.num_value > 0 and f.dim != "percent"]
    for part in amounts:
        for whole in amounts:
            if part is not whole and _amounts_alike(part, whole) and part.num_value < whole.num_value:
                if _is_about(part.num_value / whole.num_value * 100, cf):
                    return whole
    return None


#: Every reckoner above, in the order a claim's value is tried against them, with the kinds of
#: value each reads and whether it reads one sentence (``span``) or all the sources (``doc``).
_RECKONERS: tuple[tuple[str, Callable[[Fact, Analysis, Analysis, Analysis], Fact | None]], ...] = (
    ("quantity", rate_times_count),  # "$300" from "$20 per user" and "15 users"
    ("quantity", scaled),  # "400 g for eight people" from "serves 4: 200 g"
    ("quantity", lambda cf, claim, span, doc: over_a_period(cf, claim, span)),  # "18 days a year"
    ("quantity", lambda cf, claim, span, doc: years_between(cf, claim, span)),  # "two decades before 2024"
    ("quantity", lambda cf, claim, span, doc: per_item(cf, claim, span)),  # "162 km each"
    ("quantity", lambda cf, claim, span, doc: listed_count(cf, span)),  # "five frame sizes"
    ("quantity", lambda cf, claim, span, doc: list_step(cf, claim, span)),  # "four weeks apart"
    ("quantity", lambda cf, claim, span, doc: ratio_of_amounts(cf, claim, span)),  # "80% loan-to-value"
    ("time", lambda cf, claim, span, doc: on_a_schedule(cf, doc)),  # "third dose at 22:00"
    ("date", lambda cf, claim, span, doc: within_a_window(cf, claim, doc)),  # "inside the window"
    ("quantity", lambda cf, claim, span, doc: share_of_another(cf, claim, span)),  # "earn €300"
    ("quantity", lambda cf, claim, span, doc: added_on(cf, span)),  # "costs €999"
    ("date", lambda cf, claim, span, doc: days_apart(cf, claim, span)),  # "1 March … 22 March"
)


def reckoned(cf: Fact, claim: Analysis, span: Analysis, doc: Analysis) -> Fact | None:
    """The first value that the sources work out to be the claim's ``cf`` (the module docstring's
    list), reading the sentence ``span`` or all the sources ``doc`` as each reckoner does."""
    for kind, reckon in _RECKONERS:
        if cf.kind == kind and (hit := reckon(cf, claim, span, doc)) is not None:
            return hit
    return None
