"""Negations as the alignment reads them (docs/verifier.md, "How a verdict is made", step 3):
which of a text's negation cues bear on what the other text says (a "without <noun>" of a noun
the other never mentions, "not … unless" where both state a condition, "no fee" against "free",
two cues of which one speaks of something else), what a text denies of what is paid, whether a
span makes an exception of what the claim speaks of, and whether two texts deny the same words."""

from __future__ import annotations

from .analysis import Analysis
from .lexicon import _NEGATIONS, COST_WORDS, STATES_ALIKE, STOPWORDS, porter, stem, words_match


def negations(an: Analysis, other: Analysis) -> list[str]:
    """The negation cues of ``an`` that bear on what ``other`` says: a "without <noun>" whose noun
    the other text does not mention is about something the other text is not about ("photography
    without flash is permitted" against "taking photographs is prohibited")."""
    cues = list(an.negation_cues)
    for cue, words in an.scoped_negations:
        if cue == "no" and other.negation_cues:
            continue  # "with no timezone information" may say what the other's negation says
        if not any(_speaks_of(other, w) for w in words.split()) and cue in cues:
            cues.remove(cue)
    if _conditional(an) and _conditional(other):
        for cue in _denied_unless(an):
            if cue in cues:  # "does not cover … unless it has been declared" = "only covers … if"
                cues.remove(cue)
    if free(other):  # "free" against "no fee"
        for cue, _ in denied_costs(an):
            if cue in cues:
                cues.remove(cue)
    for cue in list(cues):  # "shut the pass" against "forced the closure of the pass"
        alike = STATES_ALIKE.get(cue)
        if alike is not None and any(other.states(w) for w in alike):
            cues.remove(cue)
    if len(cues) > 1:
        cues = _bearing(an, other, cues)
    return cues


def _speaks_of(an: Analysis, word: str) -> bool:
    """Whether ``an`` has ``word`` or a word of its stem ("refunded" for the "refundable" of
    "non-refundable")."""
    return an.states(word) or (len(word) > 3 and any(len(w) > 3 and porter(w) == porter(word) for w in an.words))


#: Words that end the reach of a negation: "do not receive credit and are not required to sit".
_SCOPE_ENDS = frozenset("and but or while whereas although though because which who".split())


def _bearing(an: Analysis, other: Analysis, cues: list[str]) -> list[str]:
    """Of two or more negation cues, those whose clause speaks of something ``other`` says:
    "Auditing students do not receive credit and are not required to sit the final examination"
    denies "earn credit" once, though it says "not" twice. A cue whose clause has no content
    word, and every cue when none bears, stays (the parity of all is all there is to go on). A
    single cue always stays: dropped where its clause shared no word with the other text, it lost
    more true negations than false ones on the fitting half (the wording of a denial varies)."""
    toks = an.tokens
    left = list(cues)
    bearing: list[str] = []
    beside: list[str] = []
    for i, t in enumerate(toks):
        if t.kind != "word" or t.low not in left:
            continue
        left.remove(t.low)
        scope = []
        for u in toks[i + 1 : i + 8]:
            if (u.kind == "sym" and u.text in ",;:.!?") or u.low in _SCOPE_ENDS:
                break
            if u.kind == "word" and u.low not in STOPWORDS and u.low not in _NEGATIONS:
                scope.append(u.low)
        if (scope and not any(other.states(w) for w in scope)) or (bearing and _gives_a_reason(toks, i)):
            beside.append(t.low)  # (a cue after "because" gives the reason for the one before it)
        else:
            bearing.append(t.low)
    return bearing + left if bearing and beside else cues


#: Words that open a clause giving the reason for what the sentence says before them.
_REASONS = frozenset({"because", "since"})


def _gives_a_reason(toks: list, i: int) -> bool:
    """Whether token ``i`` is in a clause of reason: "is not eligible …, because the installer was
    not certified" denies the eligibility once."""
    for t in reversed(toks[:i]):
        if t.kind == "sym" and t.text in ".;:!?":
            return False
        if t.low in _REASONS:
            return True
    return False


def free(an: Analysis) -> bool:
    """Whether the text's billing direction is "free" ("no fee", "at no cost", "free of charge")."""
    return an.directions.get("billing", (0, ""))[0] < 0


def denied_costs(an: Analysis) -> list[tuple[str, int]]:
    """(negation cue, index of the cost word it denies) in ``an``: "no fee", "does not charge",
    "costs nothing"."""
    toks = an.tokens
    out = []
    for i, t in enumerate(toks):
        if t.low in _NEGATIONS:
            k = next(
                (
                    k
                    for k in range(i + 1, min(i + 4, len(toks)))
                    if toks[k].kind == "word" and stem(toks[k].low) in COST_WORDS
                ),
                None,
            )
            if k is None and t.low == "nothing" and i > 0 and stem(toks[i - 1].low) in COST_WORDS:
                k = i - 1  # "costs nothing", "pay nothing"
            if k is not None:
                out.append((t.low, k))
    return out


def billing_denied(an: Analysis) -> bool:
    """Whether the text's billing word is a cost it denies ("not charged", "paid nothing")."""
    word = an.directions.get("billing", (0, ""))[1]
    return any(an.tokens[k].low == word for _, k in denied_costs(an))


def said_as_free(claim: Analysis, span: Analysis) -> set[int]:
    """Claim tokens the span states in the other words for "free": a denied cost word against the
    span's "free", or the claim's "free" against a cost the span denies."""
    if free(span):
        return {k for _, k in denied_costs(claim)}
    if free(claim) and denied_costs(span):
        return {i for i, t in enumerate(claim.tokens) if t.low == claim.directions["billing"][1]}
    return set()


def excepted(claim: Analysis, span: Analysis) -> tuple[str, str] | None:
    """(the span's word, the claim's) where the span makes an exception of something the claim
    speaks of ("open every day except Monday" for "closed on Mondays"): a negation of the claim
    then says what the exception says, a claim without one says the opposite."""
    toks = span.tokens
    for i, t in enumerate(toks):
        if t.low not in ("except", "excluding"):
            continue
        for u in toks[i + 1 : i + 4]:
            if u.kind == "word" and u.low not in STOPWORDS and claim.states(u.low):
                said = next((c.text for c in claim.tokens if words_match(c.low, u.low)), u.text)
                return u.text, said
    return None


def _denied_unless(an: Analysis) -> list[str]:
    """The negations of ``an`` that an "unless" after them makes a condition ("does not cover
    any condition unless it has been declared")."""
    lows = [t.low for t in an.tokens]
    # (not "no": "a string with no timezone raises an error unless …" is no such condition)
    cues = [c for c in an.negation_cues if c != "no"]
    return [low for i, low in enumerate(lows) if low in cues and "unless" in lows[i + 1 : i + 16]]


def _conditional(an: Analysis) -> bool:
    """Whether a text states a condition ("only covers it if you declare it", "provided that")."""
    lows = {t.low for t in an.tokens}
    return ("only" in lows and bool(lows & {"if", "when", "once", "after"})) or bool(lows & {"provided", "unless"})


def denies_alike(an: Analysis, other: Analysis) -> bool:
    """Whether ``other`` states what each negation of ``an`` denies: the first content word after
    a "not" ("isn't covered" against "does not cover damage …"), a negative state itself
    ("prohibited" is not "not allowed")."""
    toks = an.tokens
    for i, t in enumerate(toks):
        if t.low in an.negation_cues and t.low not in _NEGATIONS and not other.states(t.low):
            return False
        if t.low in _NEGATIONS:
            denied = next(
                (u for u in toks[i + 1 : i + 7] if u.kind == "num" or (u.kind == "word" and u.low not in STOPWORDS)),
                None,
            )
            said = denied is not None and (
                other.states(denied.low) if denied.kind == "word" else any(v.text == denied.text for v in other.tokens)
            )
            if not said:
                return False
    return True
