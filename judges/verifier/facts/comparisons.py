"""A comparison the source's own values settle (docs/verifier.md, "How a verdict is made", step
2): "The Air model is heavier than the Pro" against "the Pro model weighs 1.8 kg … the Air model
weighs 1.2 kg".

The two sides of the claim's "than" are the words before and after it (the analysis's
``than_before`` / ``than_after``); each value of the source belongs to the nearest word before it
that names one side only and occurs once in the source (a word both sides share, or one the source
repeats, names neither). When both sides get a value of the same kind and the values order the
other way, the claim's comparison is reversed."""

from __future__ import annotations

from .analysis import Analysis
from .fact import Fact
from .lexicon import _DIRECTION_WORDS, stem, words_match
from .tokens import fold_accents

#: Direction groups whose comparative orders a value ("more storage", "heavier", "grew faster").
#: "speed" only orders changes ("grew faster": a larger rise), never durations (a faster trip
#: takes less time), and "cost" only money.
_ORDERING = {"magnitude", "speed", "cost", "weight", "length"}
#: How far back from a value its owner may be named.
_WINDOW = 10


def _comparative(claim: Analysis) -> tuple[str, int] | None:
    """(comparative word, side) of the claim's first "than"."""
    for i, t in enumerate(claim.tokens):
        if t.low != "than":
            continue
        for j in range(i - 1, max(-1, i - 4), -1):
            found = _DIRECTION_WORDS.get(claim.tokens[j].low)
            if found is not None and found[0] in _ORDERING:
                return claim.tokens[j].low, found[1]
        return None
    return None


#: Prepositions that hang a value's owner after it ("€38 on the express", "1.2 kg for the Air").
_OWNER_AFTER = frozenset("on for with in at".split())


def _side_of(word: str, sides: tuple[set[str], set[str]]) -> int | None:
    for side, names in enumerate(sides):
        if any(words_match(word, n) for n in names):
            return side
    return None


def _owner(span: Analysis, fact: Fact, sides: tuple[set[str], set[str]], unique: set[str]) -> int | None:
    first = min(fact.tokens) if fact.tokens else None
    if first is None:
        return None
    # "costs €38 on the express and €21 on the regional service": the owner follows the value
    k = max(fact.tokens) + 1
    if k < len(span.tokens) and span.tokens[k].low in _OWNER_AFTER:
        k += 1
        if k < len(span.tokens) and span.tokens[k].low == "the":
            k += 1
        if k < len(span.tokens) and span.tokens[k].kind == "word":
            side = _side_of(span.tokens[k].low, sides)
            if side is not None:
                return side
    for t in reversed(span.tokens[max(0, first - _WINDOW) : first]):
        if t.kind != "word" or stem(t.low) not in unique:
            continue
        side = _side_of(t.low, sides)
        if side is not None:
            return side
    return None


def reversed_comparison(claim: Analysis, span: Analysis) -> tuple[str, str, str] | None:
    """(the claim's comparative, the first side's value, the second side's value) when the span's
    values order the claim's two sides the other way; None when they agree or cannot be told."""
    found = _comparative(claim)
    if found is None:
        return None
    word, direction = found
    # the analysis's words either side of "than", less those both sides share
    sides = (claim.than_before - claim.than_after, claim.than_after - claim.than_before)
    if not sides[0] or not sides[1]:
        return None
    counts: dict[str, int] = {}
    for t in span.tokens:
        if t.kind == "word":
            counts[stem(t.low)] = counts.get(stem(t.low), 0) + 1
    unique = {w for w, n in counts.items() if n == 1}
    values: dict[tuple[int, str], list[Fact]] = {}
    for f in span.facts:
        if f.kind != "quantity" or f.implied or f.bound not in ("eq", "approx"):
            continue
        if word in ("faster", "slower", "quicker") and f.dim == "duration":
            continue
        side = _owner(span, f, sides, unique)
        if side is not None:
            values.setdefault((side, f.dim), []).append(f)
    for (side, dim), first in values.items():
        second = values.get((1 - side, dim))
        if side != 0 or not second or len(first) != 1 or len(second) != 1:
            continue
        a, b = first[0].num_value, second[0].num_value
        if a == b or (a > b) == (direction > 0):
            return None
        return word, first[0].describe(), second[0].describe()
    return None


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
