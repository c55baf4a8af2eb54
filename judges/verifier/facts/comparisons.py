"""A comparison the source's own values settle (docs/verifier.md, "How a verdict is made", step
2): "The Air model is heavier than the Pro" against "the Pro model weighs 1.8 kg … the Air model
weighs 1.2 kg".

The two sides of the claim's "than" are the words before and after it (the analysis's
``than_before`` / ``than_after``), or the identifiers it names either side ("the Orbis 14 … than
the Orbis 16"); each value of the source belongs to the side named right after it ("8.1% of
patients in the treatment group") or to the nearest word before it, in its sentence and after no
other value of its kind, that names one side only and occurs once in the source (a word both
sides share, or one the source repeats, names neither). When both sides get a value of the same
kind and the values order the other way, the claim's comparison is reversed; of several kinds,
the one the comparative or the compared thing names ("heavier": the masses; "a bigger battery":
the values beside "battery"). A faster trip takes less time. "A joined before B" is settled the
same way by the years the sources give the two names, and "Of the two panels, the Aurex 420 has
the higher efficiency" by the values of the claim's one name and of the span's one other name."""

from __future__ import annotations

from .analysis import ORDER_HINGES, Analysis
from .fact import Fact
from .lexicon import _DIRECTION_WORDS, CHANGE_WORDS, STOPWORDS, stem, words_match
from .tokens import fold_accents

#: Direction groups whose comparative orders a value ("more storage", "heavier", "grew faster").
#: "speed" only orders changes ("grew faster": a larger rise), never durations (a faster trip
#: takes less time), and "cost" only money.
_ORDERING = {"magnitude", "speed", "cost", "weight", "length", "heat"}
#: How far before "than" its comparative may stand ("occurred more often in the treatment group
#: than"), within one clause.
_COMPARATIVE_REACH = 8
#: How far back from a value its owner may be named.
_WINDOW = 10


def _comparative(claim: Analysis) -> tuple[str, int, str] | None:
    """(comparative word, side, direction group) of the claim's first "than"."""
    for i, t in enumerate(claim.tokens):
        if t.low != "than":
            continue
        for j in range(i - 1, max(-1, i - 1 - _COMPARATIVE_REACH), -1):
            if claim.tokens[j].kind == "sym":
                break
            found = _DIRECTION_WORDS.get(claim.tokens[j].low)
            if found is not None and found[0] in _ORDERING:
                return claim.tokens[j].low, found[1], found[0]
        return None
    return None


#: Prepositions that hang a value's owner after it ("€38 on the express", "1.2 kg for the Air").
_OWNER_AFTER = frozenset("on for with in at".split())


def _side_of(word: str, sides: tuple[set[str], set[str]]) -> int | None:
    for side, names in enumerate(sides):
        if any(words_match(word, n) for n in names):
            return side
    return None


def _owner(
    span: Analysis, fact: Fact, sides: tuple[set[str], set[str]], unique: set[str], named: dict[int, int]
) -> int | None:
    """The side of the claim's comparison that ``fact`` is the value of: named right after it
    ("€38 on the express", "8.1% of patients in the treatment group"), else the nearest side named
    before it in its sentence (a word of one side only, or one of the claim's identifiers,
    ``named``: token → side, "the Orbis 14 … has a 70 Wh battery")."""
    first = min(fact.tokens) if fact.tokens else None
    if first is None:
        return None
    # "costs €38 on the express and €21 on the regional service": the owner follows the value
    k = max(fact.tokens) + 1
    if k + 1 < len(span.tokens) and span.tokens[k].low == "of":  # "8.1% of patients in the …"
        k = next((m for m in range(k + 1, min(k + 4, len(span.tokens))) if span.tokens[m].low in _OWNER_AFTER), k)
    if k < len(span.tokens) and span.tokens[k].low in _OWNER_AFTER:
        k += 1
        if k < len(span.tokens) and span.tokens[k].low == "the":
            k += 1
        if k < len(span.tokens) and span.tokens[k].kind == "word":
            side = _side_of(span.tokens[k].low, sides)
            if side is not None:
                return side
    # another value of the same kind before it has the names before it ("Bergen 2,250 mm;
    # Stavanger 1,180 mm": Bergen is no owner of the second)
    others = {k for f in span.facts if f is not fact and f.kind == fact.kind and f.dim == fact.dim for k in f.tokens}
    for k in range(first - 1, -1, -1):
        t = span.tokens[k]
        if k in others:
            return None
        if k in named:
            return named[k]
        if t.kind == "word" and stem(t.low) in unique:
            side = _side_of(t.low, sides)
            # past the window, only as far as the sentence's start ("Lhotse, connected to Everest
            # by the South Col, rises to 8,516 m")
            if side is not None and (k >= first - _WINDOW or not _sentence_start_between(span, k, first)):
                return side
        if t.initial and k < first - _WINDOW:
            break
    return None


def _sentence_start_between(span: Analysis, k: int, first: int) -> bool:
    return any(span.tokens[m].initial for m in range(k + 1, first))


def _named_sides(claim: Analysis, span: Analysis) -> dict[int, int]:
    """Token → side of the span's identifiers that the claim names on one side of its "than"
    ("the Orbis 14 … than the Orbis 16": two names that differ by their number only)."""
    hinge = next((i for i, t in enumerate(claim.tokens) if t.low == "than"), None)
    if hinge is None:
        return {}
    side_of: dict[object, int] = {}
    for f in claim.facts:
        if f.kind == "entity" and f.dim == "identifier" and f.tokens:
            side_of.setdefault(f.value, 0 if max(f.tokens) < hinge else 1)
    if len(set(side_of.values())) < 2:
        return {}
    return {k: side_of[f.value] for f in span.facts if f.value in side_of for k in f.tokens}


def reversed_comparison(claim: Analysis, span: Analysis) -> tuple[str, str, str] | None:
    """(the claim's comparative, the first side's value, the second side's value) when the span's
    values order the claim's two sides the other way; None when they agree or cannot be told."""
    found = _comparative(claim)
    order = _order_sides(claim) if found is None else None
    of_two = _the_comparative(claim, span) if found is None and order is None else None
    if found is None and order is None and of_two is None:
        return None
    named: dict[int, int] = {}
    if order is not None:  # "Spain joined before Greece": the two names' dates
        word, direction, sides = order
        group = "order"
    elif of_two is not None:  # "the Aurex 420 has the higher efficiency": it and the other one
        word, direction, group, named = of_two
        sides = (set(), set())
    else:
        word, direction, group = found  # type: ignore[misc]
        # the analysis's words either side of "than", less those both sides share
        sides = (claim.than_before - claim.than_after, claim.than_after - claim.than_before)
        named = _named_sides(claim, span)
    if (not sides[0] or not sides[1]) and not named:
        return None
    counts: dict[str, int] = {}
    for t in span.tokens:
        if t.kind == "word":
            counts[stem(t.low)] = counts.get(stem(t.low), 0) + 1
    unique = {w for w, n in counts.items() if n == 1}
    values: dict[tuple[int, str], list[Fact]] = {}
    for f in span.facts:
        if order is not None:
            if f.kind != "date" or f.bound != "eq" or f.date_value[0] is None or f.dim:
                continue
        # "up to 6,000 kg" against "up to about 5,400 kg": two maximums compare as two values
        elif f.kind != "quantity" or f.implied or f.bound not in ("eq", "approx", "le"):
            continue
        if _of_speed(word) and f.dim == "duration" and not _of_a_trip(claim):
            continue  # "grew faster": a change, which a duration does not order
        side = _owner(span, f, sides, unique, named)
        if side is not None:
            values.setdefault((side, f.dim), []).append(f)
    pairs = []
    for (side, dim), first in values.items():
        second = values.get((1 - side, dim))
        if side != 0 or not second or len(first) != 1 or len(second) != 1:
            continue
        if {first[0].bound, second[0].bound} == {"le", "eq"}:
            continue  # a maximum against a value says nothing of which is larger
        pairs.append((first[0], second[0]))
    if len(pairs) > 1 and group in _GROUP_DIMS:  # "heavier": the weights, not the screens
        pairs = [(a, b) for a, b in pairs if a.dim == _GROUP_DIMS[group]]
    if len(pairs) > 1:  # "bigger battery" of a span that gives weights too: the battery's values
        topic = _topic(claim, word)
        distance = {id(a): min(_distance(span, a, topic), _distance(span, b, topic)) for a, b in pairs}
        nearest = min(distance.values())
        pairs = [(a, b) for a, b in pairs if distance[id(a)] == nearest < _TOPIC_REACH]
    if len(pairs) != 1:
        return None
    a, b = pairs[0]
    if _of_speed(word) and a.dim == "duration":
        direction = -direction  # a faster trip takes less time
    x, y = (_when(a), _when(b)) if order is not None else (a.num_value, b.num_value)
    if x == y or (x > y) == (direction > 0):  # type: ignore[operator]
        return None
    return word, a.describe(), b.describe()


def _the_comparative(claim: Analysis, span: Analysis) -> tuple[str, int, str, dict[int, int]] | None:
    """(comparative, side, direction group, token → side of the span's names) for a claim that
    gives one of two things the higher value without a "than" ("Of the two panels, the Aurex 420
    has the higher module efficiency"): the claim's one name is the first side, the span's one
    other name the second."""
    toks = claim.tokens
    found = next(
        (
            (t.low, *_DIRECTION_WORDS[t.low][::-1])
            for i, t in enumerate(toks)
            if i > 0 and toks[i - 1].low == "the" and _DIRECTION_WORDS.get(t.low, ("", 0))[0] in _ORDERING
        ),
        None,
    )
    names = [f for f in claim.facts if f.kind == "entity" and f.tokens]
    if found is None or len({f.text for f in names}) != 1:
        return None
    word, direction, group = found
    mine = {f.text for f in names}
    in_span = [f for f in span.facts if f.kind == "entity" and f.tokens]
    others = {f.text for f in in_span} - mine
    if len(others) != 1 or not any(f.text in mine for f in in_span):
        return None
    named = {k: 0 if f.text in mine else 1 for f in in_span for k in f.tokens}
    return word, direction, group, named


def _of_speed(word: str) -> bool:
    """ "faster", "more quickly": durations order a speed the other way round."""
    return _DIRECTION_WORDS.get(word, ("", 0))[0] == "speed"


def _of_a_trip(claim: Analysis) -> bool:
    """Whether the claim's speed is a trip's or a task's ("gets you there more quickly", "a faster
    journey"), which durations order, and not a change's ("grew faster")."""
    return not any(stem(t.low) in CHANGE_WORDS for t in claim.tokens)


def _when(f: Fact) -> tuple[int, int, int]:
    y, m, d = f.date_value
    return (y or 0, m or 0, d or 0)


def _order_sides(claim: Analysis) -> tuple[str, int, tuple[set[str], set[str]]] | None:
    """("before", -1, (the first name's words, the second's)) for "Spain joined the European
    Communities before Greece did": the claim's subject and the name right after the hinge (its
    other names, "the European Communities", are what both did). None where a date or a time
    follows the hinge ("before 2000" is a bound of a date, facts/dates.py)."""
    toks = claim.tokens
    hinge = next((i for i, t in enumerate(toks) if t.low in ORDER_HINGES), None)
    if hinge is None or any(f.kind in ("date", "time") and min(f.tokens, default=0) > hinge for f in claim.facts):
        return None
    names = [f.tokens for f in claim.facts if f.kind == "entity" and f.dim != "identifier" and f.tokens]
    # a name that opens the sentence is no entity fact ("Spain became a member …"): the subject
    opening = []
    for k, t in enumerate(toks[:hinge]):
        if not t.text[:1].isupper() or t.low in STOPWORDS:
            break
        opening.append(k)
    first = tuple(opening) or next((n for n in names if max(n) < hinge), ())
    second = next((n for n in names if min(n) in (hinge + 1, hinge + 2)), ())
    if not first or not second:
        return None
    side = ({stem(toks[k].low) for k in first}, {stem(toks[k].low) for k in second})
    return toks[hinge].low, _DIRECTION_WORDS[toks[hinge].low][1], side


def _topic(claim: Analysis, word: str) -> set[str]:
    """The content words right after the claim's comparative: what it compares ("battery")."""
    i = next(i for i, t in enumerate(claim.tokens) if t.low == word)
    return {t.low for t in claim.tokens[i + 1 : i + 3] if t.kind == "word" and t.low not in STOPWORDS}


#: How near a value the claim's compared thing must be named to pick its values, in tokens.
_TOPIC_REACH = 4
#: The dimension a comparative's direction group orders ("heavier": a mass).
_GROUP_DIMS = {"weight": "mass", "length": "length", "heat": "temperature", "speed": "speed"}


def _distance(span: Analysis, f: Fact, words: set[str]) -> int:
    """How many tokens from ``f`` the nearest of ``words`` is named ("50 GB storage": 1)."""
    if any(words_match(n, w) for n in f.noun for w in words):
        return 0  # "a 70 Wh battery": the value counts it
    lo, hi = min(f.tokens), max(f.tokens)
    found = [
        lo - k if k < lo else k - hi
        for k in range(max(0, lo - _TOPIC_REACH), min(len(span.tokens), hi + _TOPIC_REACH + 1))
        if not lo <= k <= hi
        and span.tokens[k].kind == "word"
        and any(words_match(span.tokens[k].low, w) for w in words)
    ]
    return min(found, default=_TOPIC_REACH)


_PAIR_JOINERS = frozenset({"to", "-", "–", "—"})


def _ordered_pairs(an: Analysis) -> list[tuple[float, float]]:
    """Two plain numbers joined by "to" or a dash ("voted 7 to 2", "won 3-1"): a vote or a score,
    whose order is part of what it says."""
    by_token = {f.tokens[0]: f for f in an.facts if f.kind == "quantity" and f.tokens and not f.implied}
    out = []
    for i, f in by_token.items():
        g = by_token.get(i + 2)
        if g is None or f.dim != "count" or g.dim != "count" or f.noun or f.per or g.per:
            continue
        if an.tokens[i + 1].low in _PAIR_JOINERS:
            out.append((f.num_value, g.num_value))
    return out


def reversed_pair(claim: Analysis, span: Analysis) -> tuple[str, str] | None:
    """(the claim's pair, the span's) when the span gives the claim's two numbers the other way
    round ("2 to 7" against "voted 7 to 2")."""
    theirs = _ordered_pairs(span)
    for a, b in _ordered_pairs(claim):
        if a != b and (b, a) in theirs and (a, b) not in theirs:
            return f"{a:g} to {b:g}", f"{b:g} to {a:g}"
    return None


def _route_marks(an: Analysis) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The names of each "from <name> to <name>" ("moved from Basel to Zürich"), and ("to" or
    "from", name) of each "to <name>" / "from <name>" that is no part of one ("moved to Palo
    Alto"). Worked out once per text: the sources' marks are read for every claim of a call."""
    key = ("route marks",)
    if key not in an.memo:
        starts = {f.tokens[0]: f for f in an.facts if f.kind == "entity" and f.tokens}
        marks = {i: starts[i + 1] for i, t in enumerate(an.tokens) if t.low in ("to", "from") and i + 1 in starts}
        routes, in_route = [], set()
        for i, name in marks.items():
            k = max(name.tokens) + 1
            if an.tokens[i].low == "from" and k in marks and an.tokens[k].low == "to":
                routes.append((name.text, marks[k].text))
                in_route |= {i, k}
        ends = [(an.tokens[i].low, name.text) for i, name in marks.items() if i not in in_route]
        an.memo[key] = (routes, ends)
    return an.memo[key]  # type: ignore[return-value]


def _key(name: str) -> str:
    return fold_accents(name.lower())


def reversed_route(claim: Analysis, span: Analysis, doc: Analysis | None = None) -> tuple[str, str] | None:
    """("from A to B", "from B to A") when the span gives the claim's route the other way; ("to A",
    "from A to B") when the claim's destination is where the span's route starts ("moved its
    headquarters to Palo Alto" against "from Palo Alto to Austin"), and the same for an origin."""
    routes, _ = _route_marks(span)
    if not routes:
        return None
    claim_routes, claim_ends = _route_marks(claim)
    theirs = {(_key(a), _key(b)): (a, b) for a, b in routes}
    for a, b in claim_routes:
        other = theirs.get((_key(b), _key(a)))
        if other is not None and (_key(a), _key(b)) not in theirs:
            return f"from {a} to {b}", f"from {other[0]} to {other[1]}"
    if not claim_ends:
        return None
    # where the sources (``doc``: every sentence) also go, or come from
    whole_routes, whole_ends = _route_marks(doc or span)
    said = {(side, _key(name)) for side, name in whole_ends}
    said |= {(side, _key(n)) for a, b in whole_routes for side, n in (("from", a), ("to", b))}
    for side, name in claim_ends:
        if (side, _key(name)) in said:
            continue  # "… and returned to Paris": the span goes there too
        for a, b in routes:
            start, end = (a, b) if side == "to" else (b, a)
            if _key(name) == _key(start) and _key(name) != _key(end):
                return f"{side} {name}", f"from {a} to {b}"
    return None
