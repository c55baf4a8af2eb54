"""Who did it (docs/verifier.md, "How a verdict is made", step 2): "Croatia won the 2018 World
Cup" against "France won the tournament, beating Croatia". Both name Croatia, so no name is
missing and none is substituted; what differs is who does the claim's verb.

The claim's doer is the name right before its first verb ("James Holt wrote the report"), or the
name after "by" in the passive ("The report was written by James Holt"). The source's doer of the
same verb (the same word, an inflection of it, or a verb of the same act: "authored", "defeated";
lexicon.same_act) is read the same way. When the source names another doer, and the sources
also name the claim's doer elsewhere (otherwise it is a plain substitution, which align already
weighs), the roles differ."""

from __future__ import annotations

from .analysis import Analysis
from .lexicon import _IRREGULAR, STOPWORDS, is_act, same_act, stem
from .tokens import Token

_TITLES = frozenset("dr prof mr mrs ms sir dame lord lady st mt".split())
_BE = frozenset("is are was were be been being".split())
#: How far after a passive verb its "by" may come ("was authored jointly by").
_BY_WINDOW = 3


def names_of(tokens: list[Token]) -> list[tuple[int, int, frozenset[str]]]:
    """(first, last, words) of each run of capitalised words that are not stop-words or titles."""
    out: list[tuple[int, int, frozenset[str]]] = []
    start = None
    for i, t in enumerate([*tokens, Token("", "sym", 0, 0)]):
        named = t.kind == "word" and t.text[:1].isupper() and t.low not in STOPWORDS and t.low not in _TITLES
        if named and start is None:
            start = i
        elif not named and start is not None:
            out.append((start, i - 1, frozenset(x.low for x in tokens[start:i])))
            start = None
    return out


def _same(a: frozenset[str], b: frozenset[str]) -> bool:
    return a <= b or b <= a  # "Holt" is "James Holt"


def _doer(tokens: list[Token], names, verb: int) -> tuple[frozenset[str], bool] | None:
    """(the doer's words, whether the verb is passive) of the verb at ``verb``."""
    if any(tokens[j].low in _BE for j in range(max(0, verb - 2), verb)):
        for j in range(verb + 1, min(len(tokens), verb + 1 + _BY_WINDOW)):
            if tokens[j].low == "by":
                found = next((w for first, _, w in names if first > j), None)
                return (found, True) if found is not None else None
        return None
    if verb > 0 and tokens[verb - 1].text == "," and tokens[verb].low.endswith("ing") and names and names[0][0] == 0:
        return (names[0][2], False)  # "Argentina won the final, beating France": the sentence's subject
    found = next((w for _, last, w in names if last == verb - 1), None)  # "France won", not "…Ocean, opened"
    return (found, False) if found is not None else None


def _claim_verb(claim: Analysis, names) -> int | None:
    """The verb of a claim shaped "Name verb …" ("Croatia won …") or "… was verb-ed by Name"; without
    a tagger, a claim shaped otherwise is left alone."""
    tokens = claim.tokens
    for i in range(2, len(tokens) - 1):  # the passive: "The report was written by James Holt"
        if tokens[i + 1].low == "by" and tokens[i - 1].low in _BE and tokens[i].kind == "word":
            if any(first == i + 2 for first, _, _ in names):
                return i
    if not names:
        return None
    first, last, _ = names[0]
    if first > 1 or (first == 1 and tokens[0].low != "the"):
        return None
    if tokens[last].text.endswith(("'s", "’s")):
        return None  # "Baldacci's novels …": the name owns the subject, it is not the subject
    i = last + 1
    if i >= len(tokens) or tokens[i].kind != "word" or tokens[i].low in STOPWORDS or tokens[i].low in _BE:
        return None
    if not tokens[i].low.endswith(("ed", "s")) and tokens[i].low not in _IRREGULAR and not is_act(tokens[i].low):
        return None  # a verb in the past or the third person, an irregular form ("won", "wrote"), or "beat"
    return i


def role_conflict(claim: Analysis, span: Analysis, doc: Analysis | None = None) -> tuple[str, str] | None:
    """(what the claim says, what the span says) -- "Croatia won", "France won" -- when the span
    gives the claim's verb another doer and names the claim's doer too; None otherwise."""
    claim_names = claim.names
    verb = _claim_verb(claim, claim_names)
    if verb is None:
        return None
    found = _doer(claim.tokens, claim_names, verb)
    if found is None:
        return None
    doer, passive = found
    span_names = span.names
    # the claim's doer named in the span, or elsewhere in the sources (``doc``)
    if not any(_same(doer, w) for _, _, w in span_names + (doc or span).names):
        return None
    word = claim.tokens[verb]
    # another doer, unless it is what the claim compares its doer with ("Premium includes more
    # storage than the Standard plan" against "Standard includes 100 GB")
    others = [(i, d) for i, d in _doers(span, word.low) if not _same(doer, d[0])]
    other = next((o for o in others if not {stem(w) for w in o[1][0]} <= claim.than_after), None)
    if other is None:
        return None
    i, (who, was_passive) = other
    return (
        _phrase(word.text, _written(claim.tokens, claim_names, doer), passive),
        _phrase(span.tokens[i].text, _written(span.tokens, span_names, who), was_passive),
    )


#: The forms of "win", and the verbs that say whom a prize went to ("was awarded to Albert Einstein").
_WIN = frozenset("win wins won winning".split())
_GIVEN_TO = frozenset("awarded given presented granted went".split())


def _doers(an: Analysis, verb: str) -> list[tuple[int, tuple[frozenset[str], bool]]]:
    """(index, (doer, passive)) of each use of ``verb``'s act in ``an`` whose doer is named; for
    "won", the one a prize was awarded to, too ("The 1921 prize was awarded to Albert Einstein":
    Einstein won it)."""
    names = an.names
    out = []
    toks = an.tokens
    for i, t in enumerate(toks):
        if t.kind == "word" and same_act(verb, t.low):
            found = _doer(toks, names, i)
            if found is not None:
                out.append((i, found))
        elif verb in _WIN and t.low in _GIVEN_TO and i + 1 < len(toks) and toks[i + 1].low == "to":
            winner = next((w for first, _, w in names if first == i + 2), None)
            if winner is not None:
                out.append((i, (winner, False)))
    return out


def _phrase(verb: str, doer: str, passive: bool) -> str:
    if verb.lower() in _GIVEN_TO:
        return f"{verb} to {doer}"  # "awarded to Albert Einstein"
    return f"{verb} by {doer}" if passive else f"{doer} {verb}"


def _written(tokens: list[Token], names, words: frozenset[str]) -> str:
    first, last = next((f, la) for f, la, w in names if w == words)
    return " ".join(t.text for t in tokens[first : last + 1])
