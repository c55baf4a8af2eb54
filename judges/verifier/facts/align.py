"""``align(claim, span, doc)`` compares a claim with one source sentence (``span``) and the
source text around it (``doc``; the verifier passes all sources of the call) and returns
conflicts, missing facts and coverage. Conflicts are only looked for in the span; a claim
fact counts as present when any fact of ``doc`` has the same value.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from .additions import added_items
from .analysis import Analysis
from .compare import _exact, _fact_relation
from .comparisons import reversed_comparison, reversed_pair, reversed_route
from .entities import _alias_in_text, is_alias, place_names
from .equations import equation_conflict
from .fact import Fact
from .implied import CHANGE, DIFFERENCE, SUM
from .lexicon import (
    CHANGE_WORDS,
    DIFFERENCE_WORDS,
    END_DATE_WORDS,
    END_VERBS,
    GROUP_WORDS,
    IMPLIED_WORDS,
    STOPWORDS,
    SUM_WORDS,
    stem,
    words_match,
)
from .limits import against_limit, limit_side
from .names import may_be_a_name, name_before, opening_name, swapped_opener
from .negations import billing_denied, denies_alike, excepted, negations, said_as_free
from .quantifiers import quantifier_mismatches
from .ranges import amount_in_range, date_in_range, every_day, range_end, range_text, time_in_range, version_in_range
from .reckoning import reckoned
from .roles import role_conflict
from .work import Work


@dataclass
class Conflict:
    # number | unit | date | time | entity | negation | antonym | comparative | comparison | quantifier | ordinal
    kind: str
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
    negated_alike: bool = False  # the claim and the span both negate, alike (evidence.settle_negations)

    @property
    def best_conflict(self) -> Conflict | None:
        return max(self.conflicts, key=lambda c: c.confidence) if self.conflicts else None


WordSim = Callable[[str, str], float]

# Physical dimensions name their slot by themselves; the others (durations, money, shares,
# plain counts) recur in one text for different things, so a conflict needs more context.
_STRONG_DIMS = frozenset(
    "length area mass volume temperature speed data charge energy power frequency calories dose".split()
)

#: The most a number or date conflict weighs when the sources give the claim's value elsewhere, by
#: arithmetic across sentences (facts/implied.py) or stated with the claim's words around it
#: (_stated_with_its_words): below the confidence at which a conflict blocks a sentence
#: (evidence.BLOCKING_CONFLICT), so that the evidence can take in the sentences that give the value.
DOUBTFUL = 0.45

#: The most a name conflict weighs when the sources name the claim's name in another sentence: the
#: claim may join facts of two sentences, or pin the name on the wrong fact, so the conflict still
#: blocks the sentence but counts for less (below the blocking confidence it let swapped names and
#: dates through as supported). A number or date stated with the claim's own words around it weighs
#: DOUBTFUL instead.
STATED_ELSEWHERE = 0.65
#: The most a number conflict weighs when the span gives its value for another group than the
#: claim's ("free-tier accounts" against "paid accounts", weekdays against "on Sundays"): the
#: claim's value is then missing rather than contradicted.
ANOTHER_GROUP = 0.25

#: In the support score, a matched number / date / name weighs as much as two content words.
FACT_WEIGHT = 2


#: Endings that make a place name say where something is from ("Parma-based", "German-born").
_WHERE_FROM = frozenset("based born made built headquartered listed registered".split())


def _entity_present(f: Fact, words: set[str], text_low: str) -> bool:
    if f.dim == "identifier":  # "order 4471" is in "Order #4471"
        return re.sub(r"\s+", " ", str(f.value)) in re.sub(r"\s+", " ", text_low.replace("#", ""))
    v = str(f.value)
    said = re.sub(r"['’]s$", "", f.text)  # "JWST's" is JWST, an alias of "James Webb Space Telescope"
    if "-" in v and re.search(rf"\b{re.escape(v.replace('-', ' '))}\b", text_low):
        return True  # "SIM-only" in "SIM Only 30"
    head, _, suffix = v.rpartition("-")
    if suffix in _WHERE_FROM and head and (head in words or stem(head) in words):
        return True  # "a Parma-based firm" in "based in Parma"
    if any(w in words for w in place_names(v)):
        return True  # "English and Welsh law" in "the laws of England and Wales"
    return v in words or stem(v) in words or _alias_in_text(said, text_low)


def _implied_words(span: Analysis, span_set: set[str]) -> frozenset[str]:
    """The words ``span`` says without writing them (lexicon.IMPLIED_WORDS), once per text."""
    key = ("implied words",)
    if key not in span.memo:
        stems = {stem(w) for w in span_set}
        span.memo[key] = frozenset().union(*(words for cues, words in IMPLIED_WORDS if not cues.isdisjoint(stems)))
    return span.memo[key]  # type: ignore[return-value]


def _coverage(
    claim: Analysis,
    span: Analysis,
    exclude: set[int],
    word_sim: WordSim | None,
    given: set[int] | frozenset[int] = frozenset(),
) -> tuple[float, list[str]]:
    """Share of the claim's content words (minus ``exclude`` token indices) that the span has.
    ``given`` token indices count as covered (names the source mentions in another sentence,
    which the span refers back to with a pronoun)."""
    span_words = [w for _, w in span.content] + [t.low for t in span.tokens if t.kind == "word"]
    # "free-tier" and "free tier" are one wording: a compound's parts are words of the span too
    span_set = set(span_words) | {p for w in span_words if "-" in w for p in w.split("-") if len(p) > 2}
    # "ineffective" speaks of "effective" (whether it denies the claim's is the negation check's)
    span_set |= {rest for cue, rest in span.scoped_negations if cue not in ("without", "no")}
    words = [(i, w) for i, w in claim.content if i not in exclude]
    if not words:
        return 0.5, []
    covered = 0.0
    uncovered: list[str] = []
    implied = _implied_words(span, span_set)
    for i, w in words:
        if i in given or w in span_set or stem(w) in implied or any(words_match(w, s) for s in span_set if len(s) > 2):
            covered += 1
            continue
        parts = [p for p in w.split("-") if p] if "-" in w else []
        if len(parts) > 1 and all(
            p in span_set or any(words_match(p, s) for s in span_set if len(s) > 2) for p in parts
        ):
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


def _same_day_of_year(a: Fact, b: Fact) -> bool:
    """Two dates on the same day and month (of different years)."""
    if a.kind != "date" or b.kind != "date" or a.dim or b.dim:
        return False
    _, ma, da = a.date_value
    _, mb, db = b.date_value
    return da is not None and (ma, da) == (mb, db)


def _age(cf: Fact, years: Fact) -> bool:
    """A bare number of the claim that is an age the source gives in years: "he was 35 when he
    died" (the years between "born in 1756" and "died in 1791"), "kids under 12" ("younger than
    12 years")."""
    return (
        cf.kind == "quantity"
        and cf.dim == "count"
        and not cf.noun
        and not cf.per
        and years.kind == "quantity"
        and years.dim == "duration"
        and years.unit == "year"
        and cf.raw is not None
        and cf.raw == years.raw
    )


def _birthday(cf: Fact, sf: Fact, span: Analysis) -> bool:
    """A bare number of the claim that is the age of a birthday the span names ("75" and "the
    borrower's 75th birthday")."""
    after = {t.low for t in span.tokens[max(sf.tokens) + 1 : max(sf.tokens) + 3]} if sf.tokens else set()
    return (
        sf.kind == "ordinal"
        and bool(after & {"birthday", "birthdays"})
        and cf.dim == "count"
        and not cf.noun
        and not cf.per
        and cf.raw == sf.value
    )


#: Direction groups that name places ("the west wing … the east wing"): a claim with both sides
#: speaks of two places, and which it names first is what the comparison turns on.
_PLACES = frozenset({"ns", "ew"})


def _other_side(claim: Analysis, span: Analysis) -> bool:
    """Whether the claim and the span open with different names that both name: the winner of
    one is the loser of the other."""
    mine, theirs = claim.names, span.names
    if not mine or not theirs:
        return False
    first, other = mine[0][2], theirs[0][2]
    if first <= other or other <= first:
        return False
    return any(first <= w or w <= first for _, _, w in theirs[1:]) and any(
        other <= w or w <= other for _, _, w in mine[1:]
    )


_SENTENCE_END = frozenset(".!?;")
_CLAUSE_END = _SENTENCE_END | {",", ":", "(", ")"}


def _near(tokens: list, first: int, last: int, reach: int, stops: frozenset[str] | set[str]) -> list[int]:
    """Indices of the tokens within ``reach`` of ``first``..``last``, not past a stop token."""
    out = []
    for step, start in ((-1, first - 1), (1, last + 1)):
        k = start
        while 0 <= k < len(tokens) and abs(k - (first if step < 0 else last)) <= reach:
            if tokens[k].text in stops:
                break
            out.append(k)
            k += step
    return out


def _stated_with_its_words(cf: Fact, claim: Analysis, doc: Analysis) -> int:
    """Whether the sources state the claim's value with the words beside it in the claim's clause
    ("founded in 1895" against "... was founded in 1895"): a sentence that gives another value
    then speaks of another fact ("moved in 1931"), and the claim joins the two. A value stated with
    other words ("in 2015 it was demolished" for "closed in 2015"; "Premium users get 1,000" for
    "Free users get 1,000") is not. 0 when not; else how many of the claim's words around its
    value (_frame) the sources state around it, which a sentence giving another value may beat."""
    if not cf.tokens:
        return 0
    near = set(_near(claim.tokens, min(cf.tokens), max(cf.tokens), 4, _CLAUSE_END))
    words = {stem(w) for i, w in claim.content if i in near and i not in cf.tokens}
    if not words:
        return 0
    best = 0
    for df in doc.facts:
        if df.implied or not df.tokens or _fact_relation(cf, df) != "match" or not _exact(cf, df):
            continue
        around = _words_around(doc, df)
        if words <= around:
            best = max(best, len(_frame(cf, claim) & around))
    return best


def _frame(cf: Fact, claim: Analysis) -> set[str]:
    """The claim's content words (stemmed) in the clause of its value ``cf``, up to 12 tokens away."""
    near = set(_near(claim.tokens, min(cf.tokens), max(cf.tokens), 12, _CLAUSE_END))
    return {stem(w) for i, w in claim.content if i in near and i not in cf.tokens}


def _words_around(an: Analysis, f: Fact) -> set[str]:
    """The words (stemmed) within 8 tokens of ``f`` in its sentence."""
    return {stem(an.tokens[k].low) for k in _near(an.tokens, min(f.tokens), max(f.tokens), 8, _SENTENCE_END)}


def _worked_out_in(cf: Fact, claim: Analysis, doc: Analysis) -> bool:
    """Whether the sources give the claim's value in another way than as it is written: a date
    whose year they state elsewhere, a bare number of its unit, inside a range, or by arithmetic
    (ranges.py, reckoning.py)."""
    return (
        (cf.kind == "date" and _year_given_elsewhere(cf, doc, doc) is not None)
        or (cf.kind == "quantity" and _bare_number_of_its_unit(cf, claim, doc) is not None)
        or version_in_range(cf, doc) is not None
        or time_in_range(cf, doc)[0] is not None
        or amount_in_range(cf, doc)[0] is not None
        or date_in_range(cf, doc)[0] is not None
        or reckoned(cf, claim, doc, doc) is not None
    )


def _bare_number_of_its_unit(cf: Fact, claim: Analysis, an: Analysis) -> Fact | None:
    """A bare number of ``an`` that is the claim's value where ``an`` names the claim's unit or
    noun in another place: "waits 30 seconds" against "the number of seconds the client waits
    … Defaults to 30" (a reference's way of writing a default)."""
    if cf.raw is None or (cf.dim == "count" and not cf.noun):
        return None
    last = claim.tokens[max(cf.tokens)] if cf.tokens else None
    if last is None or last.kind != "word" or not an.states(last.low):
        return None
    return next(
        (
            sf
            for sf in an.facts
            if sf.kind == "quantity" and sf.dim == "count" and not sf.noun and sf.raw == cf.raw and sf.bound == cf.bound
        ),
        None,
    )


def _count_of_something_unsaid(cf: Fact, sf: Fact, span: Analysis) -> bool:
    """A count of the claim's noun ("300 employees") against a bare number of a sentence that never
    names that noun ("revenue of 5 million dollars, up from 4 million"): the number counts what
    the sentence is about, not the claim's noun, so it is no rival (the count is missing)."""
    return cf.dim == "count" and bool(cf.noun) and not sf.noun and not any(span.states(n) for n in cf.noun)


def _another_group(claim: Analysis, span: Analysis) -> bool:
    """Whether the claim speaks of another group than the span does ("Paid accounts can run up to
    100 machines" against "Free-tier accounts are limited to 3"; "On Sundays …" against "Monday to
    Friday …, and on Saturdays"): the span's values are then no rivals of the claim's."""
    key = ("another group", claim.text)
    if key in span.memo:
        return bool(span.memo[key])
    mine = {stem(w) for _, w in claim.content if not span.states(w)}
    theirs = {stem(w) for _, w in span.content if not claim.states(w)}
    found = any(mine & g and theirs & g for g in GROUP_WORDS) or any(_rival_words(a, b) for a in mine for b in theirs)
    days = [f for f in claim.facts if f.kind == "weekday"]
    if not found and days and any(f.kind == "weekday" for f in span.facts):
        found = not any(_fact_relation(d, sf) == "match" for d in days for sf in span.facts if sf.kind == "weekday")
    span.memo[key] = found
    return found


def _rival_words(a: str, b: str) -> bool:
    """ "postgraduate" and "undergraduate": one ending of five letters or more, another start."""
    n = _common_prefix(a[::-1], b[::-1])
    return n >= 5 and len(a) - n >= 3 and len(b) - n >= 3


def _anothers_value(cf: Fact, sf: Fact, claim: Analysis, seen: dict[int, list[Fact]]) -> bool:
    """Whether the source's value ``sf`` is the value of another fact of the claim: "provided in
    1956 …, and in 1958 reports recommended closing it" against "In 1956, a new siding was
    provided" -- the sentence's 1956 is the claim's own 1956, not a rival of its 1958.

    ``seen`` keeps, for each source fact of one ``align`` call, the claim's facts that state its
    value: asked for every claim fact in conflict with ``sf``, a claim of many values (a table
    flattened into one sentence) otherwise cost its facts squared times the sentence's (minutes
    for 4,000 characters of numbers)."""
    if id(sf) not in seen:
        seen[id(sf)] = [
            of
            for of in claim.facts
            if (of.kind, of.dim) == (sf.kind, sf.dim) and _fact_relation(of, sf) == "match" and _exact(of, sf)
        ]
    return any(of is not cf for of in seen[id(sf)])


def _year_given_elsewhere(cf: Fact, an: Analysis, doc: Analysis) -> Fact | None:
    """A date of ``an`` written without its year that is the claim's date, when the sources give
    the claim's year elsewhere: "aired on March 4, 2019" against "… on March 6th, 2019 … weekly
    from March 4th". A news text states its year once and then writes "March 4th"; another year
    is never read into it, so this can only match, never conflict."""
    year, month, day = cf.date_value
    if year is None or month is None or cf.dim or cf.bound != "eq":
        return None
    for sf in an.facts:
        if sf.kind == "date" and not sf.dim and sf.bound == "eq" and sf.date_value == (None, month, day):
            key = ("year", year)
            if key not in doc.memo:
                doc.memo[key] = any(f.kind == "date" and f.date_value[0] == year for f in doc.facts)
            return sf if doc.memo[key] else None
    return None


def _range_without(cf: Fact, an: Analysis) -> Fact | None:
    """A range of weekdays in the text that holds none of the claim's days ("Monday to Saturday"
    for "Sundays"): read with the polarity of the two sentences, it supports a claim that the
    days outside it are closed and contradicts one that they are open."""
    days = set(cf.value) if isinstance(cf.value, tuple) else {cf.value}
    return next(
        (f for f in an.facts if f.kind == "weekday" and isinstance(f.value, tuple) and not days & set(f.value)), None
    )


def _alias_among(cf: Fact, an: Analysis) -> Fact | None:
    """A name of the text that is the claim's name in short or long form (an acronym, a clipped
    first word): the claim may spell out what the source abbreviates, or the reverse."""
    return next(
        (f for f in an.facts if f.kind == "entity" and f.dim != "identifier" and is_alias(cf.text, f.text)), None
    )


def _conf(base: float, slope: float, cov: float) -> float:
    return round(max(0.0, min(0.99, base + slope * cov)), 4)


_PRONOUN_STARTS = (
    "it ",
    "its ",
    "it's ",
    "they ",
    "their ",
    "he ",
    "his ",
    "she ",
    "her ",
    "this ",
    "these ",
    "that ",
    "those ",
    "the latter ",
    "the former ",
)


#: A pronoun subject after an opening phrase ("Unlike stratovolcanoes such as Mount Fuji, they
#: rarely erupt explosively"; "In 2019, it moved to Berlin").
_PRONOUN_AFTER_A_PHRASE = re.compile(
    r"(?:unlike|like|despite|after|before|since|although|though|while|in|on|at|during|with|as|because|when)\b"
    r"[^.;,]{0,80}, (?:it|its|they|their|he|his|she|her)\b"
)


#: The last word of a run of two or more capitalised words: the head noun a later "the park"
#: or "the company" names again ("Yellowstone National Park", "Acme Mining Company").
_NAME_HEAD = re.compile(r"\b(?:[A-Z][\w'’-]*\s+)+([A-Z][a-z]{2,})\b")


def _may_be_implied(cf: Fact, implied: Fact, claim: Analysis) -> bool:
    """An implied percent change (implied.py) stands for a claim's percent only when the claim
    speaks of a change ("increased by 25%"), never for a share ("25% of revenue"); an implied
    difference of two sums only when it speaks of a difference ("saves €100")."""
    if implied.kind == "date":  # a start plus a length of time is when something ends
        return _near_end_word(cf, claim)
    if implied.noun not in (CHANGE, DIFFERENCE, SUM) or not cf.tokens:
        return True
    if implied.noun == SUM:  # "including public holidays, … 33 days off"
        return any(t.low in SUM_WORDS for t in claim.tokens)
    first = min(cf.tokens)
    if implied.noun == DIFFERENCE:  # "saves €100", "€50 more per month than"
        near = claim.tokens[max(0, first - 4) : max(cf.tokens) + 4]
        return any(t.low in DIFFERENCE_WORDS for t in near)
    return any(stem(t.low) in CHANGE_WORDS for t in claim.tokens[max(0, first - 4) : first] if t.kind == "word")


def _near_end_word(cf: Fact, claim: Analysis) -> bool:
    first = min(cf.tokens, default=0)
    return any(stem(t.low) in END_DATE_WORDS for t in claim.tokens[max(0, first - 5) : first] if t.kind == "word")


def _an_end_time(cf: Fact, claim: Analysis) -> bool:
    """A clock time the claim gives as when something ends or arrives ("arrives in Hvar at
    09:30"): only such a time may be the sources' start plus duration. A start time ("starts at
    10:30") is never one, or "starts at 9 am and lasts 90 minutes" would support it."""
    if cf.kind != "time" or not cf.tokens:
        return False
    first = min(cf.tokens)
    return any(stem(t.low) in END_VERBS for t in claim.tokens[max(0, first - 5) : first] if t.kind == "word")


def _owners(an: Analysis, value: Fact, in_sentence: bool = False) -> list[Fact]:
    """The names written between the value before ``value`` (or the start, or with
    ``in_sentence`` the start of its sentence) and ``value``: whose value it is ("The Aurora 5
    has 50 MP, while the Aurora 5 Lite uses 12 MP")."""
    first = min(value.tokens)
    before = [f for f in an.facts if f.kind == "quantity" and f.tokens and max(f.tokens) < first]
    start = max((max(f.tokens) for f in before), default=-1)
    if in_sentence:
        start = max([start] + [k - 1 for k in range(first) if an.tokens[k].initial])
    return [f for f in an.facts if f.kind == "entity" and f.tokens and start < min(f.tokens) and max(f.tokens) < first]


def _owners_after(an: Analysis, value: Fact) -> list[Fact]:
    """The names written after ``value`` and before the next value (or the end)."""
    last = max(value.tokens)
    after = [min(f.tokens) for f in an.facts if f.kind == "quantity" and f.tokens and min(f.tokens) > last]
    stop = min(after, default=len(an.tokens))
    return [f for f in an.facts if f.kind == "entity" and f.tokens and last < min(f.tokens) and max(f.tokens) < stop]


def _label(an: Analysis, value: Fact) -> set[str]:
    """The content words right before a value, back to the value or separator before it ("fee
    0.0012 ETH; minimum withdrawal 0.01 ETH": {"minimum", "withdrawal"} for the second)."""
    taken = {k for f in an.facts if f.kind == "quantity" for k in f.tokens}
    out: set[str] = set()
    for k in range(min(value.tokens) - 1, max(-1, min(value.tokens) - 4), -1):
        t = an.tokens[k]
        if k in taken or t.kind == "sym" or t.low in STOPWORDS:
            break
        if t.kind == "word":
            out.add(stem(t.low))
    return out


def _labelled_otherwise(cf: Fact, hit: Fact, claim: Analysis, span: Analysis) -> Fact | None:
    """The span's value whose label the claim gives its value, when the span labels the claim's
    value otherwise: "the minimum withdrawal is 0.0012 ETH" against "fee 0.0012 ETH; minimum
    withdrawal 0.01 ETH"."""
    said = {stem(w) for _, w in claim.content}
    theirs = _label(span, hit)
    if not theirs or theirs & said:
        return None
    for sf in span.facts:
        if sf is hit or sf.kind != "quantity" or not sf.tokens or _fact_relation(cf, sf) != "conflict":
            continue
        label = _label(span, sf)
        if label and label <= said:
            return sf
    return None


def _names_text(an: Analysis, value: Fact) -> str:
    return " ".join(dict.fromkeys(f.text for f in _owners(an, value)))


def _value_of_the_claims_owner(
    cf: Fact, hit: Fact, claim: Analysis, span: Analysis, doc: Analysis | None = None
) -> Fact | None:
    """The span's other value for the name the claim gives ``cf`` to, when the span gives the
    claim's value to another name: "The Aurora 5 Lite has a 50 MP camera" against "The Aurora 5
    has a 50 MP camera, while the Aurora 5 Lite uses a 12 MP sensor"; or another sentence of the
    sources' (``doc``): "At 53.9 km, the Gotthard Base Tunnel is …" against "The Gotthard Base
    Tunnel … is 57.1 km long. It overtook Japan's Seikan Tunnel, which is 53.9 km long"."""
    if not cf.tokens or not hit.tokens or hit.implied:
        return None
    labelled = _labelled_otherwise(cf, hit, claim, span)
    if labelled is not None:
        return labelled
    # the claim's name may follow its value ("At 53.9 km, the Gotthard Base Tunnel is …")
    mine = {str(f.value) for f in _owners(claim, cf) or _owners_after(claim, cf)}
    if not mine or {str(f.value) for f in _owners(span, hit)} in (set(), mine):
        return None
    for an in (span, doc) if doc is not None and doc is not span else (span,):
        for sf in an.facts:
            if (
                sf is not hit
                and sf.kind == "quantity"
                and sf.tokens
                and _fact_relation(cf, sf) == "conflict"
                and {str(f.value) for f in _owners(an, sf, in_sentence=an is doc)} == mine
            ):
                return sf
    return None


def _as_claim_reads(cf: Fact, sf: Fact, claim: Analysis) -> Fact:
    """``sf`` as a plain count when it is a rate whose denominator the claim names in its own
    words: "pages of up to 100 items" and "each page holds 100" speak of "100 results per page".
    A rate per unit of time stays a rate ("per day" is left to the rate readers)."""
    if cf.kind == "quantity" and not cf.per and sf.kind == "quantity" and sf.per and sf.per != "duration":
        if sf.per in claim.words:
            return replace(sf, per="")
    return sf


def refers_back(sentence: str, before: str | None = None) -> bool:
    """True when a sentence refers to the sentence ``before`` it: it opens with a pronoun, or it
    names with "the <noun>" what ``before`` named in full ("Yellowstone National Park …. Most of
    the park lies in Wyoming.")."""
    low = sentence.strip().lower().replace("’", "'")
    if low.startswith(_PRONOUN_STARTS) or _PRONOUN_AFTER_A_PHRASE.match(low):
        return True
    if before is None:
        return False
    for m in _NAME_HEAD.finditer(before):
        head = m.group(1)
        if head not in sentence and re.search(rf"\bthe {head.lower()}\b", low):
            return True
    # "The 2018 FIFA World Cup was hosted by Russia. France won the tournament": what the name is
    if _NAME_HEAD.search(before) and (kind := _THE_KIND.search(low)) and kind.group(1) not in before.lower():
        return True
    return False


#: Nouns for the kind of thing a name names, which a next sentence uses to name it again
#: ("the tournament" for "the 2018 FIFA World Cup", "the company" for "Helix Systems").
_KINDS_OF_NAMED = (
    "tournament championship competition league festival conference summit company firm "
    "corporation startup brand organisation organization agency band film movie series album "
    "novel team club city town village country island river lake museum university hospital "
    "bridge election war battle treaty report study survey programme program project product "
    "device app service platform software vaccine drug mission ship"
).split()
_THE_KIND = re.compile(rf"\bthe ({'|'.join(_KINDS_OF_NAMED)})\b")


_DIGITS = re.compile(r"\d+")


#: What a number that is a code is called ("a 429 error", "status 404"), stemmed.
_CODE_NOUNS = frozenset(stem(w) for w in ("error", "status", "code", "response"))


def _in_identifier(cf: Fact, an: Analysis) -> Fact | None:
    """The identifier of ``an`` whose number a bare count of the claim is: "you get a 429" and
    "returns HTTP 429", "order 4471" and "Order #4471"; or whose number is the claim's year:
    "the 2020 Nobel Prize" and "the Nobel Prize in Chemistry 2020"."""
    if cf.kind == "date" and cf.bound == "eq" and not cf.dim and cf.date_value[0] and not any(cf.date_value[1:]):
        year = str(cf.date_value[0])
        return next(
            (f for f in an.facts if f.kind == "entity" and f.dim == "identifier" and year in _DIGITS.findall(f.text)),
            None,
        )
    if cf.kind != "quantity" or cf.dim != "count" or cf.per or cf.raw is None:
        return None
    if cf.noun and not set(cf.noun) & _CODE_NOUNS:  # "a 429 error", "a 401 Unauthorized error"
        return None
    if not float(cf.raw).is_integer():
        return None
    number = str(int(cf.raw))
    return next(
        (f for f in an.facts if f.kind == "entity" and f.dim == "identifier" and number in _DIGITS.findall(f.text)),
        None,
    )


def align(
    claim: Analysis,
    span: Analysis,
    doc: Analysis | None = None,
    word_sim: WordSim | None = None,
    context: Analysis | None = None,
    work: Work | None = None,
) -> Alignment:
    """Align a claim with one source sentence (``span``) of a source (``doc``).

    Returns conflicts (with a confidence each; see the verifier module for how the
    contradiction threshold applies), the strong claim facts absent from the whole
    source, the matched fact pairs, and the claim's content-word coverage by the span. With
    ``work``, its pairings are charged first (facts/work.py): an alignment that does not fit raises
    ``OverWork`` before any is made.
    """
    doc = doc or span
    if work is not None:
        work.charge_alignment(claim, span, doc)
    conflicts: list[Conflict] = []
    missing: list[Fact] = []
    matched: list[tuple[Fact, Fact]] = []
    stated_by_claim: dict[int, list[Fact]] = {}  # _anothers_value's, for this call (the span's facts live through it)
    doc_text_low = doc.text_low
    span_text_low = span.text_low
    fact_tokens = {i for f in claim.facts if f.kind != "entity" for i in f.tokens}
    given: set[int] = said_as_free(claim, span)
    if context is not None:  # the sentence a pronoun of the span refers to
        given |= {i for i, w in claim.content if w in context.words or stem(w) in context.words}
    base_cov, uncovered = _coverage(claim, span, fact_tokens, word_sim, given)
    # context coverage (for conflict confidence): without the words whose meaning may flip
    ctx_cov, _ = _coverage(claim, span, fact_tokens | claim.polar, word_sim, given)

    limit = limit_side(claim)
    # the two sentences' polarities differ; a value outside the source's range then is what the
    # claim denies ("closed on Sundays", "not open at 8 p.m."), which explains the difference
    neg_c, neg_s = negations(claim, span), negations(span, claim)
    flipped = len(neg_c) % 2 != len(neg_s) % 2
    explained = False
    for cf in claim.facts:
        # 1. is it matched in the span, or anywhere in the source?
        span_rel = [(_fact_relation(cf, _as_claim_reads(cf, sf, claim)), sf) for sf in span.facts]
        hit = next((sf for rel, sf in span_rel if rel == "match" and _exact(cf, sf)), None)
        if hit is None and not any(rel == "unit" for rel, _ in span_rel):
            hit = next((sf for rel, sf in span_rel if rel == "match"), None)
        if (
            cf.kind == "entity"
            and cf.dim != "identifier"
            and hit is None
            and _entity_present(cf, span.words, span_text_low)
        ):
            hit = cf
        if hit is None and cf.kind == "entity" and cf.dim != "identifier":
            hit = _alias_among(cf, span)  # "World Health Organization" for the source's "WHO"
        if hit is None:
            hit = _in_identifier(cf, span)
        if hit is None and cf.kind == "date":
            hit = _year_given_elsewhere(cf, span, doc)
        if hit is None and cf.kind == "quantity":
            hit = _bare_number_of_its_unit(cf, claim, span)
        if hit is None and cf.kind == "quantity" and limit is not None:
            # "1,500 calls a day would go over the limit" against "allows 1,000 calls per day"
            hit = next(
                (sf for rel, sf in span_rel if rel in ("match", "conflict") and against_limit(cf, sf, limit)), None
            )
        if hit is None:
            hit = reckoned(cf, claim, span, doc)  # worked out: "$300" from "$20 per user" and "15 users"
        if hit is None and cf.kind == "entity" and cf.dim == "identifier":
            hit = version_in_range(cf, span)  # "2.3.2" in "versions 2.3.0 through 2.3.4"
        if hit is None and cf.kind == "weekday":
            hit = every_day(cf, span)  # "on a Sunday" against "7 days a week"
        ranged: dict[int, str] = {}
        if hit is None and cf.kind == "time":  # "at 10 a.m." against "9 am to 6 pm", "24 hours a day"
            hit, outside = time_in_range(cf, span)
            if outside is not None and flipped:
                hit = outside  # "not open at 8 p.m." against "9 am to 6 pm"
                explained = True
            elif outside is not None:  # its two ends are one value, not two rivals
                span_rel = [(rel, sf) for rel, sf in span_rel if sf.kind != "time"] + [("conflict", outside)]
                ranged[id(outside)] = range_text(outside, span)
        if hit is None and cf.kind in ("quantity", "date"):  # "12 km" in "10–15 km", "25 Nov" in "24–27 Nov"
            hit, outside = amount_in_range(cf, span) if cf.kind == "quantity" else date_in_range(cf, span)
            if outside is not None:  # its two ends are one value, not two rivals
                ends = {id(outside), id(range_end(outside, span))}
                span_rel = [(rel, sf) for rel, sf in span_rel if id(sf) not in ends] + [("conflict", outside)]
                ranged[id(outside)] = range_text(outside, span)
        if hit is None and cf.kind == "weekday":
            outside = _range_without(cf, span)
            if outside is not None and flipped:
                hit = outside  # "closed on Sundays" against "open Monday to Saturday"
                explained = True
            elif outside is not None:
                span_rel.append(("conflict", outside))  # "open on Sundays" against the same
        if hit is None and cf.kind == "quantity":  # "kids under 12" = "younger than 12 years"
            hit = next((sf for sf in span.facts if _age(cf, sf) and sf.bound == cf.bound), None)
        if hit is None and cf.kind == "quantity":  # "before they turn 75" = "before their 75th birthday"
            hit = next((sf for sf in span.facts if _birthday(cf, sf, span)), None)
        if hit is None and (cf.kind in ("quantity", "date") or _an_end_time(cf, claim)):
            hit = next(
                (
                    sf
                    for sf in span.implied
                    if (_fact_relation(cf, sf) == "match" or _age(cf, sf)) and _may_be_implied(cf, sf, claim)
                ),
                None,
            )
        if (
            hit is not None
            and cf.kind == "quantity"
            and (theirs := _value_of_the_claims_owner(cf, hit, claim, span, doc))
        ):
            conflicts.append(
                Conflict(
                    "number",
                    cf.describe(),
                    theirs.describe(),
                    _conf(0.7, 0.25, ctx_cov),
                    f"number mismatch: claim says {cf.describe()}, source says {theirs.describe()} "
                    f"for {_names_text(claim, cf)}",
                )
            )
            continue
        if hit is not None:
            matched.append((cf, hit))
            continue
        in_doc = any(_fact_relation(cf, df) == "match" and _exact(cf, df) for df in doc.facts) or (
            cf.kind == "entity" and _entity_present(cf, doc.words, doc_text_low)
        )
        in_doc = in_doc or _in_identifier(cf, doc) is not None
        if not in_doc:  # the same for every sentence of the call
            key = ("worked out", claim.text, cf)  # by value: an id may be reused once a claim is done
            if key not in doc.memo:
                doc.memo[key] = _worked_out_in(cf, claim, doc)
            in_doc = bool(doc.memo[key])
        in_doc = in_doc or (cf.kind == "entity" and cf.dim != "identifier" and _alias_among(cf, doc) is not None)
        # a value the sources give only by arithmetic across sentences ("70 percent" of "$310
        # million" for "$217 million"): a sentence stating one of its terms does not contradict it
        implied_in_doc = (
            not in_doc
            and (cf.kind in ("quantity", "date") or _an_end_time(cf, claim))
            and any(_fact_relation(cf, df) == "match" and _may_be_implied(cf, df, claim) for df in doc.implied)
        )
        in_doc = in_doc or implied_in_doc
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
                conflicts.append(
                    Conflict(
                        "unit",
                        cf.describe(),
                        sf.describe(),
                        _conf(0.75, 0.2, ctx_cov),
                        f"unit mismatch: claim says {cf.describe()}, source says {sf.describe()}",
                    )
                )
            elif rel == "conflict" and not _anothers_value(cf, sf, claim, stated_by_claim):
                kind = {
                    "quantity": "number",
                    "date": "date",
                    "time": "time",
                    "ordinal": "ordinal",
                    "weekday": "date",
                    "entity": "entity",
                }[cf.kind]
                if cf.kind == "quantity":
                    strong_dim = cf.dim in _STRONG_DIMS or (cf.dim == "count" and bool(cf.noun) and bool(sf.noun))
                    conf = _conf(0.7, 0.25, ctx_cov) if strong_dim else _conf(0.35, 0.55, ctx_cov)
                    if _count_of_something_unsaid(cf, sf, span):
                        conf = min(conf, DOUBTFUL)
                    if _another_group(claim, span):
                        conf = min(conf, ANOTHER_GROUP)
                elif cf.kind == "entity":
                    conf = _conf(0.8, 0.15, ctx_cov)
                    if in_doc:
                        conf = min(conf, STATED_ELSEWHERE)  # "Python 3.12" stated in another sentence
                elif cf.kind in ("ordinal", "weekday"):
                    conf = _conf(0.3, 0.5, ctx_cov)
                else:
                    conf = _conf(0.35, 0.55, ctx_cov)
                    if cf.kind == "date" and _same_day_of_year(cf, sf):
                        conf += 0.05  # "3 October 1991" is about the day "3 October 1990" is
                if implied_in_doc:  # "arrives at 09:30" against "departs at 08:30" + "takes 1 hour"
                    conf = min(conf, DOUBTFUL)
                if limit is not None and any(against_limit(cf, df, limit) for df in doc.facts):
                    conf = min(conf, DOUBTFUL)  # over the free tier's limit, under the paid plans' one
                if cf.kind != "entity":
                    key = ("stated", claim.text, cf)  # the same for every sentence of the call
                    if key not in doc.memo:
                        doc.memo[key] = _stated_with_its_words(cf, claim, doc)
                    with_words = cast(int, doc.memo[key])
                    # unless the span gives its value with more of the claim's words ("must accept
                    # or decline the offer by 30 April" against "offers … sent on 16 April")
                    if with_words and (not sf.tokens or len(_frame(cf, claim) & _words_around(span, sf)) <= with_words):
                        conf = min(conf, DOUBTFUL)
                said = ranged.get(id(sf)) or sf.describe()
                conflicts.append(
                    Conflict(
                        kind,
                        cf.describe(),
                        said,
                        conf,
                        f"{kind} mismatch: claim says {cf.describe()}, source says {said}",
                    )
                )
        if cf.kind == "entity" and cf.dim != "identifier" and not (set(cf.tokens) & given):
            sub = _entity_substitute(claim, span, cf, guess=not cf.weak)
            if sub is not None:
                sf, shares_name = sub
                conf = _conf(0.8, 0.15, cov_wo) if shares_name else _conf(0.25, 0.6, cov_wo)
                if in_doc:
                    conf = min(conf, STATED_ELSEWHERE)
                conflicts.append(
                    Conflict(
                        "entity",
                        cf.text,
                        sf.text,
                        conf,
                        f"entity mismatch: claim says {cf.text}, source says {sf.text}",
                    )
                )
        if not in_doc and not cf.weak:
            missing.append(cf)
    missing += added_items(claim, span, doc)
    opener = opening_name(claim, doc)
    if opener is not None and not any(c.kind == "entity" for c in conflicts):
        # "Canberra is the capital of Australia" against "Sydney is the capital …": a name that
        # opens the claim is no entity fact (every sentence opens with a capital), but one the
        # sources never say, with another name where the span has it, is a swapped name
        sub = swapped_opener(claim, span) or name_before(claim, span)
        if sub is not None:
            cov, _ = _coverage(claim, span, fact_tokens | claim.polar | {0}, word_sim, given)
            conflicts.append(
                Conflict(
                    "entity",
                    opener.text,
                    sub[0].text,
                    _conf(0.25, 0.6, cov),
                    f"entity mismatch: claim says {opener.text}, source says {sub[0].text}",
                )
            )

    # 3. negation polarity, antonyms, quantifiers (only on an otherwise matching sentence)
    exception = excepted(claim, span)
    if flipped and not explained and exception is not None:
        explained = True  # "closed on Mondays" against "open every day except Monday"
    elif exception is not None and not flipped and not neg_c and "except" not in claim.partial:
        conflicts.append(  # "open on Mondays" against the same
            Conflict(
                "quantifier",
                exception[1],
                f"except {exception[0]}",
                _conf(0.35, 0.55, ctx_cov),
                f"quantifier mismatch: claim says {_quote(exception[1])}, source says 'except {exception[0]}'",
            )
        )
    if flipped and not explained:
        cue_c = ", ".join(neg_c) or "no negation"
        cue_s = ", ".join(neg_s) or "no negation"
        conflicts.append(
            Conflict(
                "negation",
                cue_c,
                cue_s,
                _conf(0.3, 0.6, ctx_cov),
                f"negation mismatch: claim has {_quote(cue_c)}, source has {_quote(cue_s)}",
            )
        )
    for group, (side, word) in claim.directions.items():
        other = span.directions.get(group)
        if other is None or other[0] == side:
            continue
        if _swapped(claim, span):
            continue  # "A is less than B" = "B is more than A"
        if group == "billing" and (billing_denied(claim) or billing_denied(span)):
            continue  # "not charged" is "free": the negation check has weighed it
        if group in claim.two_way and group not in _PLACES:
            continue  # "rising costs … a drop in profit" against "profit fell": no side to set against
        if group == "outcome" and _other_side(claim, span):
            continue  # "Chelsea lost to Arsenal" is "Arsenal won against Chelsea"
        conflicts.append(
            Conflict(
                "antonym",
                word,
                other[1],
                _conf(0.2, 0.6, ctx_cov),
                f"opposite meaning: claim says {_quote(word)}, source says {_quote(other[1])}",
            )
        )
    for group, (side, word) in claim.directions.items():
        other = span.directions.get(group)
        if other is not None and other[0] == side and _swapped(claim, span):
            conflicts.append(
                Conflict(
                    "comparative",
                    word,
                    other[1],
                    _conf(0.2, 0.6, ctx_cov),
                    f"comparison reversed: claim and source say {_quote(word)} of opposite things",
                )
            )
    roles = role_conflict(claim, span, doc) or equation_conflict(claim, span, doc)
    if roles is not None:
        said, stated = roles
        conflicts.append(
            Conflict(
                "entity",
                said,
                stated,
                _conf(0.45, 0.45, ctx_cov),
                f"role mismatch: claim says {said}, source says {stated}",
            )
        )
    settled = reversed_comparison(claim, span)
    settled_cov = ctx_cov
    if settled is None and doc is not span and sum(f.kind == "quantity" for f in span.facts) < 2:
        # the two sides' values in two sentences: "Standard includes 100 GB. Premium includes 1 TB."
        # (the same for every sentence of the call: worked out once per claim)
        settled_key = ("settled", claim.text)  # by text: an id may be reused once a claim is done
        if settled_key not in doc.memo:
            doc.memo[settled_key] = reversed_comparison(claim, doc)
        settled = doc.memo[settled_key]  # type: ignore[assignment]
        if settled is not None:  # the sentences that give the two values say what the claim does
            settled_cov, _ = _coverage(claim, doc, fact_tokens | claim.polar, word_sim, given)
    if settled is not None:
        word, first, second = settled
        conflicts.append(
            Conflict(
                "comparison",  # settled by values, as a number mismatch is (evidence._CONFLICT_GROUPS)
                word,
                f"{first} vs {second}",
                _conf(0.4, 0.55, settled_cov),
                f"comparison reversed: claim says {_quote(word)}, source gives {first} against {second}",
            )
        )
    for kind, swapped in (("comparison", reversed_pair(claim, span)), ("entity", reversed_route(claim, span, doc))):
        if swapped is not None:  # "2 to 7" against "voted 7 to 2"; "from Basel to Zürich" the other way
            conflicts.append(
                Conflict(
                    kind,
                    swapped[0],
                    swapped[1],
                    _conf(0.5, 0.45, ctx_cov),
                    f"order mismatch: claim says {swapped[0]}, source says {swapped[1]}",
                )
            )
    for said, stated, is_word in quantifier_mismatches(claim, span):
        shown = _quote(stated) if is_word else stated
        conflicts.append(
            Conflict(
                "quantifier",
                said,
                stated,
                _conf(0.2, 0.6, ctx_cov),
                f"quantifier mismatch: claim says {_quote(said)}, source says {shown}",
            )
        )
    n_words = len([1 for i, _ in claim.content if i not in fact_tokens])
    # values (numbers, dates, times, identifiers) -- names are already content words
    strong = [f for f in claim.facts if not f.weak and (f.kind != "entity" or f.dim == "identifier")]
    hits = sum(1 for cf, sf in matched if cf in strong and _exact(cf, sf))
    total = n_words + FACT_WEIGHT * len(strong)
    support_cov = (base_cov * n_words + FACT_WEIGHT * hits) / total if total else base_cov
    alike = bool(neg_c and neg_s) and not flipped and denies_alike(claim, span) and denies_alike(span, claim)
    return Alignment(conflicts, missing, matched, base_cov, uncovered, support_cov, alike)


def _swapped(claim: Analysis, span: Analysis) -> bool:
    """The two sides of a "than" comparison are exchanged between claim and span."""
    if not (claim.than_after and span.than_after):
        return False

    def outside(words: set[str], others: set[str]) -> set[str]:  # stems differ: "raise", "rais"
        return {w for w in words if not any(words_match(w, o) for o in others)}

    ca = outside(claim.than_after, span.than_after)
    sa = outside(span.than_after, claim.than_after)
    return bool(ca) and bool(sa) and not outside(ca, span.than_before) and not outside(sa, claim.than_before)


def _quote(s: str) -> str:
    return f"'{s}'"


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _labels(an: Analysis, k: int) -> bool:
    """Whether the word at ``k`` opens a label ("System requirements:", "Opening hours:",
    "Pricing:"), which names what follows, not who or where."""
    return any(t.text == ":" for t in an.tokens[k + 1 : k + 4])


def _word_diff(claim: Analysis, span: Analysis) -> list[tuple[str, int, int, int, int]]:
    """The word-level diff of the claim and the span, worked out once for the pair: it does not
    depend on the claim's fact being placed, and a long pair's diff costs more than the rest of
    its alignment (a claim of 40 names against a sentence of 640: 11 of 13 seconds, once per name)."""
    key = ("word diff", claim.text)
    if key not in span.memo:
        a = [t.low for t in claim.tokens]
        b = [t.low for t in span.tokens]
        span.memo[key] = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return span.memo[key]  # type: ignore[return-value]


def _entity_substitute(claim: Analysis, span: Analysis, cf: Fact, guess: bool = True) -> tuple[Fact, bool] | None:
    """A span entity standing where the claim has ``cf``: (fact, shares part of a name)."""
    claim_words = claim.words
    candidates = [
        sf
        for sf in span.facts
        if sf.kind == "entity"
        and sf.dim == "name"
        and sf.value not in claim_words
        and stem(str(sf.value)) not in claim_words
    ]
    # a capitalised word opening the span may be a name too ("Canberra is the capital ...")
    for k, t in enumerate(span.tokens):
        if (
            guess
            and t.initial
            and may_be_a_name(t)
            and t.low not in claim_words
            and stem(t.low) not in claim_words
            and not any(k in f.tokens for f in span.facts)
            and k not in span.polar
            and not _labels(span, k)
        ):
            candidates.append(Fact("entity", t.low, t.text, t.start, t.end, dim="name", tokens=(k,)))
    # same multi-word name with one part changed: "Pierre Curie" vs "Marie Curie"; the changed
    # part may be a word the claim uses in another name ("Gustave Flaubert" against "Gustave
    # Eiffel" in a claim about the Eiffel Tower), so every span name is a candidate here unless
    # the claim names it whole
    c_phrase = {str(claim.tokens[i].low) for i in cf.tokens}
    if len(c_phrase) > 1:
        claim_phrases = [frozenset(claim.tokens[i].low for i in f.tokens) for f in claim.facts if f.kind == "entity"]
        for sf in span.facts:
            if sf.kind != "entity" or sf.dim != "name":
                continue
            s_phrase = {span.tokens[i].low for i in sf.tokens}
            if len(s_phrase) > 1 and c_phrase & s_phrase and not any(s_phrase <= p for p in claim_phrases):
                return sf, True
    if not candidates:
        return None
    c_low = str(cf.value)
    # not a substitute: part of a name the claim also uses ("Mediterranean Sea" for
    # "the Mediterranean"), or a derived form ("Martian" for "Mars", "Canadian" for "Canada")
    claim_names = {claim.tokens[i].low for i in claim.entity_tokens}
    candidates = [
        sf
        for sf in candidates
        if not ({span.tokens[i].low for i in sf.tokens} & claim_names)
        and not _common_prefix(c_low, str(sf.value)) >= 3
        and not is_alias(cf.text, sf.text)
    ]
    if not candidates:
        return None
    # the aligned position in a word-level diff
    c_idx = set(cf.tokens)
    for op, i1, i2, j1, j2 in _word_diff(claim, span):
        if op == "replace" and c_idx & set(range(i1, i2)):
            for sf in candidates:
                if set(sf.tokens) & set(range(j1, j2)):
                    return sf, False
    if len(candidates) == 1:
        return candidates[0], False
    # the nearest entity after the same preceding content word
    prev_words = [
        claim.tokens[k].low
        for k in range(max(0, min(c_idx) - 3), min(c_idx))
        if claim.tokens[k].kind == "word" and claim.tokens[k].low not in STOPWORDS
    ]
    if prev_words:
        for sf in candidates:
            start = min(sf.tokens)
            window = [span.tokens[k].low for k in range(max(0, start - 4), start) if span.tokens[k].kind == "word"]
            if any(words_match(p, w) for p in prev_words for w in window):
                return sf, False
    return None
