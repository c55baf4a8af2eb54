"""Who is what (docs/verifier.md, "How a verdict is made", step 2): "The capital of Australia is
Sydney" against "Canberra is the capital city of Australia, while Sydney is its largest city". Both
name Sydney, so no name is missing and none is substituted; what differs is which name the source
gives the claim's role.

A clause "Name is the role" or "the role is Name" (one side a name, the other a role opened by a
determiner or a possessive, "Australia's capital is Sydney") is an equation. The role's words
before its first preposition are what it is ("capital", "chief executive"); a possessor ("the
company's") and the words after the preposition ("of Australia") are whose it is. The source
gives the claim's role another name when one of its equations has every "what" word of the
claim's role and mentions every "whose" word somewhere, names someone else, and the sources name
the claim's name elsewhere (otherwise it is a plain substitution, which align already weighs)."""

from __future__ import annotations

from dataclasses import dataclass

from .analysis import Analysis
from .lexicon import STOPWORDS, stem, words_match
from .roles import _same, _written
from .tokens import Token

_COPULA = frozenset("is was are were".split())
#: Words that end a clause: "Canberra is the capital, while Sydney is its largest city".
_CLAUSE_ENDS = frozenset(", ; : . while whereas and but which who".split())
_DETERMINERS = frozenset("the its their his her our your a an".split())
_PREPOSITIONS = frozenset("of in for at on from to".split())


@dataclass(frozen=True)
class Equation:
    name: frozenset[str]  # the name's words, lower case
    what: frozenset[str]  # stems of the role's words before its first preposition
    whose: frozenset[str]  # stems of the possessor and of the words after the preposition
    text: str  # the name as written
    role: str  # the role as written ("the capital city of Australia")


def equations_of(an: Analysis) -> list[Equation]:
    """The text's equations, clause by clause (read through ``Analysis.equations``, once per text)."""
    tokens = an.tokens
    names = an.names
    by_first = {n[0]: n for n in names}
    out: list[Equation] = []
    start = 0
    for end in [*(i for i, t in enumerate(tokens) if t.low in _CLAUSE_ENDS), len(tokens)]:
        clause = range(start, end)
        start = end + 1
        verb = next((k for k in clause if tokens[k].low in _COPULA), None)
        if verb is None:
            continue
        left, right = list(range(clause.start, verb)), list(range(verb + 1, clause.stop))
        for name_side, role_side in ((left, right), (right, left)):
            name = _name_alone(by_first, name_side, tokens)
            if name is None or not role_side or not _opens_a_role(tokens[role_side[0]]):
                continue
            role = _role(role_side, an)
            if role is not None:
                opener = tokens[role_side[0]]
                written = (opener.low if opener.low in _DETERMINERS else opener.text) + an.text[
                    opener.end : tokens[role_side[-1]].end
                ]
                out.append(Equation(name[2], role[0], role[1], _written(tokens, names, name[2]), written))
            break
    return out


def _opens_a_role(t: Token) -> bool:
    """A determiner, or a possessive ("Australia's capital is Sydney")."""
    return t.low in _DETERMINERS or t.text.endswith(("'s", "’s"))


def _name_alone(by_first: dict, side: list[int], tokens: list[Token]) -> tuple[int, int, frozenset[str]] | None:
    """The name the side is, alone (a leading "the" aside: "the Louvre"), or None."""
    words = [k for k in side if tokens[k].kind == "word" and tokens[k].low != "the"]
    name = by_first.get(words[0]) if words else None
    return name if name is not None and name[1] == words[-1] else None


def _role(side: list[int], an: Analysis) -> tuple[frozenset[str], frozenset[str]] | None:
    what: set[str] = set()
    whose: set[str] = set()
    after = False
    for k in side:
        t = an.tokens[k]
        if t.kind != "word":
            continue
        if t.low in _PREPOSITIONS:
            after = True
            continue
        if t.low in STOPWORDS or t.low in _DETERMINERS:
            continue
        possessor = t.text.endswith(("'s", "’s"))
        (whose if after or possessor else what).add(stem(t.low))
    return (frozenset(what), frozenset(whose)) if what else None


def equation_conflict(claim: Analysis, span: Analysis, doc: Analysis | None = None) -> tuple[str, str] | None:
    """(what the claim says, what the span says) -- "Sydney is the capital of Australia", "Canberra
    is the capital city of Australia" -- when the span gives the claim's role another name; None
    otherwise (module docstring)."""
    mine = claim.equations
    if not mine:
        return None
    # the claim's name stated in the span, or elsewhere in the sources (``doc``)
    span_names = [w for _, _, w in span.names + (doc or span).names]
    stated = doc.equations if doc is not None else []
    for eq in mine:
        if not any(_same(eq.name, w) for w in span_names):
            continue
        if not all(w in span.words for w in eq.whose):
            continue
        if any(_same(eq.name, o.name) and _has_role(o, eq) and eq.whose <= o.whose | o.what for o in stated):
            continue  # the sources also give the claim's name this role, of the same whole
        for other in span.equations:
            if _same(eq.name, other.name):
                continue
            if _has_role(other, eq):
                return f"{eq.text} is {eq.role}", f"{other.text} is {other.role}"
    return None


def _has_role(eq: Equation, claimed: Equation) -> bool:
    """Whether ``eq``'s role has every "what" word of the claimed role."""
    return all(any(words_match(w, o) for o in eq.what) for w in claimed.what)
