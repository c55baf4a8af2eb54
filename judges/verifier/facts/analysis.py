"""``analyse(text)`` turns a sentence into an :class:`Analysis`: its *facts* and the
signals the verifier aligns between a claim and a source sentence.

Signals besides facts: negation polarity (``not``, ``never``, ``no``, ``without``,
negative-state words such as ``closed``, ``missing``, ``banned``, and negating affixes:
``gluten-free``, ``non-refundable``), antonymic
direction words (increase/decrease, more/less, before/after, faster/slower, north/south,
older/younger ...), quantifiers (all/every/always vs some/most/sometimes) and the
claim's remaining content words, used to judge whether a source sentence talks about
*the same thing* (coverage).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from .dates import _extract_dates, _extract_times, bound_dates
from .entities import _extract_entities
from .fact import Fact
from .implied import implied_facts
from .lexicon import (
    _DIRECTION_WORDS,
    _FILLER,
    _NEGATIONS,
    _NEGATIVE_STATES,
    _NON_NEGATING,
    _PARTIAL,
    _POSITIVE_STATES,
    _UNIVERSAL,
    NEGATING_PREFIX,
    PREPOSITIONS,
    STOPWORDS,
    negated_stem,
    prefix_negated,
    stem,
)
from .quantities import (
    _extract_ordinals,
    _extract_quantities,
    extract_hash_identifiers,
    merge_compound_durations,
    share_list_units,
    share_range_units,
)
from .tokens import Token, fold_accents, name_letter, tokenize

if TYPE_CHECKING:
    from .equations import Equation

#: Words that order two things as "than" compares them.
#: Words of order between two things, read as the hinge of a comparison ("A predates B").
ORDER_HINGES = frozenset("before after predates predated precedes preceded postdates postdated".split())


def _none_of(tokens: list[Token], i: int) -> bool:
    """A capitalised "None" is Python's null, unless it opens "None of …"."""
    return i + 1 < len(tokens) and tokens[i + 1].low == "of"


def _number_sign(tokens: list[Token], i: int) -> bool:
    """ "No." before a number is "number" ("Symphony No. 9", "Platform No 4"), not a negation."""
    after = tokens[i + 1 : i + 3]
    if after and after[0].text == "." and len(after) > 1 and after[1].kind == "num":
        return True
    return tokens[i].text == "No" and not tokens[i].initial and bool(after) and after[0].kind == "num"


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
    #: (cue, noun) of each "without <noun>" among the negation cues ("without flash"): it negates
    #: the sentence only where the other text speaks of the noun. ("no <noun>" was tried the same
    #: way and dropped: "no increase", "no effect" deny the claim's own predicate, whose noun the
    #: source words otherwise -- "rising", "strengthened".)
    scoped_negations: list[tuple[str, str]] = field(default_factory=list)
    #: direction groups the text has words of both sides of ("rising energy costs … an 8% drop in
    #: profit"): which side its claim is on cannot be told from the words
    two_way: set[str] = field(default_factory=set)

    def states(self, word: str) -> bool:
        """Whether the text has the word, or a word of its stem."""
        return word in self.words or stem(word) in self.words

    @property
    def strong_facts(self) -> list[Fact]:
        return [f for f in self.facts if not f.weak]

    #: what the checks worked out about this text against a claim, kept for the call (align.py)
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def implied(self) -> list[Fact]:
        """What the facts imply by arithmetic (facts/implied.py): matches only, never conflicts."""
        return implied_facts(self.facts)

    @cached_property
    def text_low(self) -> str:
        """The text as its words are compared (Token.low): lower case, accents folded."""
        return fold_accents(self.text.lower())

    @cached_property
    def names(self) -> list[tuple[int, int, frozenset[str]]]:
        """Runs of capitalised words (roles.py); worked out once, since every claim of a call
        reads the sources' names."""
        from .roles import names_of  # roles reads Analysis: imported here, not at the top

        return names_of(self.tokens)

    @cached_property
    def equations(self) -> list[Equation]:
        """Its "Name is the role" clauses (equations.py), worked out once per text."""
        from .equations import equations_of  # equations reads Analysis: imported here

        return equations_of(self)


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


#: After "no" and before "than", words that make a bound of it, not a denial.
_BOUND_COMPARATIVES = frozenset("more less fewer later earlier greater higher lower longer shorter".split())


def _bound_phrase(tokens: list[Token], i: int) -> bool:
    """Whether word ``i`` sits in "no <comparative> than" ("no later than 5 p.m.")."""
    return 0 < i < len(tokens) - 1 and tokens[i - 1].low == "no" and tokens[i + 1].low == "than"


#: Words before a participle that describes the noun after it ("every failed attempt").
_DETERMINERS = frozenset("a an the every each any all some this that these those its their our your his her my".split())
#: Verbs that make a participle after them a state of the subject ("was withdrawn", "has failed").
_STATE_VERBS = frozenset(
    "is are was were be been being get gets got remain remains remained stay stays has have had become became".split()
)


def _describes_a_noun(tokens: list[Token], i: int) -> bool:
    """Whether the participle at ``i`` describes a noun rather than saying something is not so:
    "after every failed attempt", "regardless of the amount withdrawn", "the items removed from
    the list" (and not "the offer was withdrawn", "the test failed")."""
    low = tokens[i].low
    if i == 0 or not (low.endswith("ed") or low in _AFTER_A_NOUN):
        return False
    prev, nxt = tokens[i - 1], tokens[i + 1] if i + 1 < len(tokens) else None
    if prev.low in _DETERMINERS:
        return nxt is not None and nxt.kind == "word" and nxt.low not in STOPWORDS
    after_a_noun = prev.kind == "word" and prev.low not in STOPWORDS and prev.low not in _STATE_VERBS
    return after_a_noun and low in _AFTER_A_NOUN and (nxt is None or nxt.kind != "word" or nxt.low in PREPOSITIONS)


def _off(tokens: list[Token], i: int) -> bool:
    """ "switch off encryption", "turned off", "with noise cancellation off": disabled, as
    "cannot be disabled" denies."""
    if tokens[i].low != "off" or i == 0:
        return False
    return tokens[i - 1].low in _SWITCHES or "with" in {t.low for t in tokens[max(0, i - 4) : i - 1]}


_SWITCHES = frozenset("switch switches switched switching turn turns turned turning".split())


def _failure_to(tokens: list[Token], i: int) -> bool:
    """ "the crew's failure to monitor airspeed": the crew did not monitor it."""
    return tokens[i].low in ("failure", "failures") and i + 1 < len(tokens) and tokens[i + 1].low == "to"


def _status_name(tokens: list[Token], i: int) -> bool:
    """Whether token ``i`` is a capitalised word of the name of a status code ("401 Unauthorized",
    "403 (Forbidden)", "404 Not Found", "503 Service Unavailable")."""
    if not tokens[i].is_cap or tokens[i].initial:
        return False
    k = i - 1
    while k >= 0 and i - k <= 3 and (tokens[k].text == "(" or (tokens[k].is_cap and not tokens[k].initial)):
        k -= 1
    return k >= 0 and tokens[k].kind == "num" and tokens[k].text.isdigit() and 100 <= int(tokens[k].text) <= 599


def _drops(tokens: list[Token], i: int) -> bool:
    """ "drops the headphone jack", "ditched its free tier": no longer has it (a verb of removal
    before what it removes; "prices dropped by 5%" removes nothing)."""
    return (
        tokens[i].low in _DROPS
        and i + 1 < len(tokens)
        and tokens[i + 1].low in ("the", "its", "their", "his", "her", "support")
    )


_DROPS = frozenset("drop drops dropped dropping ditch ditches ditched scrap scraps scrapped".split())


def _falls_short(tokens: list[Token], i: int) -> bool:
    """ "fall short of the recommended levels": they do not meet them."""
    return (
        tokens[i].low == "short"
        and i > 0
        and tokens[i - 1].low in _FALLS
        and i + 1 < len(tokens)
        and tokens[i + 1].low == "of"
    )


_FALLS = frozenset("fall falls fell falling fallen".split())


#: Participles that, after a noun, describe it ("the amount withdrawn", "items removed from").
_AFTER_A_NOUN = frozenset("withdrawn removed excluded rejected refused denied".split())


def analyse(text: str, proper: frozenset[str] | set[str] = frozenset()) -> Analysis:
    """Facts and alignment signals of one sentence (or a short passage)."""
    tokens = tokenize(text)
    used: set[int] = set()
    facts: list[Fact] = []
    extract_hash_identifiers(tokens, used, facts, text)
    _extract_dates(tokens, used, facts, text)
    _extract_times(tokens, used, facts, text)
    _extract_ordinals(tokens, used, facts, words=False)
    _extract_quantities(tokens, used, facts, text)
    _extract_entities(tokens, used, facts, text, proper)
    _extract_ordinals(tokens, used, facts)
    facts.sort(key=lambda f: f.start)
    facts = merge_compound_durations(facts, text)
    facts = share_list_units(share_range_units(facts, tokens), tokens)
    facts = bound_dates(tokens, facts)

    entity_tokens = {i for f in facts if f.kind == "entity" for i in f.tokens}
    neg_cues: list[str] = []
    prefixed: list[tuple[str, str]] = []
    directions: dict[str, tuple[int, str]] = {}
    two_way: set[str] = set()
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
        if "-" in low and t.text[:1].isupper():  # "Budapest-Keleti" names Budapest too
            words.update(p for p in low.split("-") if p)
        if i in used and i not in entity_tokens:
            continue
        if _status_name(tokens, i):
            continue  # "HTTP 401 Unauthorized", "Error 403 (Forbidden)", "404 Not Found": a name
        if low in _NEGATIONS and not (low == "none" and t.text[0].isupper() and not _none_of(tokens, i)):
            if low == "no" and _number_sign(tokens, i):
                continue
            neg_cues.append(low)
            continue
        base = negated_stem(low)
        if base is not None:  # "gluten-free": a negation, and "gluten" is what it is about
            neg_cues.append(low)
            polar.add(i)
            words.update((base, stem(base)))
            content.append((i, base))
            if low.startswith(NEGATING_PREFIX):  # "non-violent" denies only where the other says "violent"
                prefixed.append((low, base))
            continue
        rest = prefix_negated(low)
        if rest is not None:  # "ineffective": a negation where the other text says "effective"
            neg_cues.append(low)
            prefixed.append((low, rest))
        elif (
            (low in _NEGATIVE_STATES and not _describes_a_noun(tokens, i))
            or _failure_to(tokens, i)
            or _falls_short(tokens, i)
            or _drops(tokens, i)
            or _off(tokens, i)
        ):
            neg_cues.append(low)
            polar.add(i)
            content.append((i, low))
            continue
        if low in _UNIVERSAL:
            universal.append(low)
            continue
        if low in _PARTIAL:
            if not (low == "only" and i > 0 and tokens[i - 1].low == "not"):  # "not only … but"
                partial.append(low)
            continue
        if low in _BOUND_COMPARATIVES and _bound_phrase(tokens, i):
            continue  # "no later than": a bound (the number's), not a direction
        if low in _DIRECTION_WORDS and i not in entity_tokens:
            group, side = _DIRECTION_WORDS[low]
            if directions.setdefault(group, (side, low))[0] != side:
                two_way.add(group)
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
    scoped: list[tuple[str, str]] = list(prefixed)
    for i in range(len(lows) - 1):
        pair = (lows[i], lows[i + 1])
        if pair in _NON_NEGATING and pair[0] in neg_cues:
            neg_cues.remove(pair[0])
        elif i > 0 and lows[i - 1] == "at" and lows[i] == "no" and "no" in neg_cues:
            neg_cues.remove("no")  # "at no charge", "at no extra cost"
        elif lows[i] == "no" and pair[1] in _BOUND_COMPARATIVES and _bound_phrase(tokens, i + 1) and "no" in neg_cues:
            neg_cues.remove("no")  # "no later than 45 minutes before", "no more than 100 items": bounds
        elif lows[i] == "without" and not lows[i + 1].endswith("ing") and not any(w in _NEGATIONS for w in lows[:i]):
            # "photography without flash is permitted": "without" before a noun may qualify just
            # that noun (it negates the sentence only where the other text speaks of the noun:
            # align); before a verb ("without paying") it negates, and after another negation it
            # pairs with it ("you cannot enter without a ticket")
            # (the words of the noun phrase: "without qualifying account activity")
            obj = " ".join(w for w in lows[i + 1 : i + 4] if w.isalpha() and w not in STOPWORDS)
            if obj:
                scoped.append(("without", obj))
        elif i > 0 and lows[i - 1] == "with" and lows[i] == "no" and "no" in neg_cues:
            # "shared by two women with no male co-laureate": as "without", it qualifies a noun
            obj = " ".join(w for w in lows[i + 1 : i + 4] if w.isalpha() and w not in STOPWORDS)
            if obj:
                scoped.append(("no", obj))

    than_after: set[str] = set()
    than_before: set[str] = set()
    # the comparison's hinge: "than", or else "before" / "after" between two things ("the service
    # was launched before the app"; not before a date or a time, which are facts of their own)
    hinges = [i for i, t in enumerate(tokens) if t.low == "than" and i not in used] or [
        i
        for i, t in enumerate(tokens[:-1])
        if t.low in ORDER_HINGES and i not in used and tokens[i + 1].kind == "word" and i + 1 not in used
    ]
    if hinges:
        hinge = hinges[0]
        # the words either side of the hinge that name a side ("Model A" keeps its letter); the
        # comparative just before it is no side ("more expensive than"), a verb further off that
        # reads as a direction is ("the client raises an error after waiting"), and so is one
        # after it ("older than the south wing")
        named = [
            k
            for k, x in enumerate(tokens)
            if x.kind == "word"
            and (x.low not in STOPWORDS or name_letter(tokens, k))
            and not (x.low in _DIRECTION_WORDS and hinge - 3 < k < hinge)
        ]
        than_after = {stem(tokens[k].low) for k in named if hinge < k < hinge + 6}
        than_before = {stem(tokens[k].low) for k in named if hinge - 8 <= k < hinge}
    return Analysis(
        text,
        tokens,
        facts,
        len(neg_cues),
        neg_cues,
        directions,
        universal,
        partial,
        content,
        entity_tokens,
        words,
        than_after,
        than_before,
        polar,
        scoped,
        two_way,
    )
