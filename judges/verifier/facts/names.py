"""Names that open a claim (verifier_lab/NOTES.md, "What it can detect"): a sentence opens with a
capital, so its first word is no entity fact; where the sources never say it and the span puts
another name where the claim has it ("Canberra is the capital …" against "Sydney is the capital
…"; "Suharto proclaimed …" against "…, Sukarno proclaimed …"), the claim's opening name was
swapped. Also the words that open a sentence without naming anything."""

from __future__ import annotations

from .analysis import Analysis
from .fact import Fact
from .lexicon import _FILLER, STOPWORDS, stem, words_match
from .tokens import Token


def may_be_a_name(t: Token) -> bool:
    """Whether a capitalised word that opens a sentence may be a name: no function word, filler
    or opener ("Despite"), no participle or adverb ("Executed in tempera, it …", "Unfortunately")."""
    return (
        t.is_cap
        and t.low not in STOPWORDS
        and t.low not in _FILLER
        and t.low not in OPENERS
        and not t.low.endswith(("ed", "ing", "ly"))
    )


def opening_name(claim: Analysis, doc: Analysis) -> Fact | None:
    """The claim's first word as a name, where it may be one and the sources never say it."""
    t = claim.tokens[0] if claim.tokens else None
    if (
        t is None
        or t.kind != "word"
        or not may_be_a_name(t)
        or (t.low.endswith("s") and not t.low.endswith(("ss", "us", "is")))  # "Growers", "Employees"
        or any(0 in f.tokens for f in claim.facts)
        or t.low in doc.words
        or stem(t.low) in doc.words
        or any(u.low == t.low for u in claim.tokens[1:])
    ):
        return None
    return Fact("entity", t.low, t.text, t.start, t.end, dim="name", weak=True, tokens=(0,))


def swapped_opener(claim: Analysis, span: Analysis) -> tuple[Fact, bool] | None:
    """The span's first word where it differs from the claim's and the two sentences go on alike
    ("Sydney is the capital of Australia" for "Canberra is the capital …"), as (fact, False)."""
    if len(span.tokens) < 3 or len(claim.tokens) < 3:
        return None
    t = span.tokens[0]
    same_after = [a.low for a in claim.tokens[1:3]] == [b.low for b in span.tokens[1:3]]
    if not same_after or t.kind != "word" or not t.is_cap or t.low in STOPWORDS or t.low in claim.words:
        return None
    return Fact("entity", t.low, t.text, t.start, t.end, dim="name", tokens=(0,)), False


def name_before(claim: Analysis, span: Analysis) -> tuple[Fact, bool] | None:
    """A name of the span right before the verb that follows the claim's first word ("On 17
    August 1945, Sukarno proclaimed …" for "Suharto proclaimed …"), as (fact, False)."""
    verb = claim.tokens[1].low if len(claim.tokens) > 1 else ""
    if not verb or verb in STOPWORDS or claim.tokens[1].kind != "word":
        return None
    for sf in span.facts:
        k = max(sf.tokens, default=-2) + 1
        first = min(sf.tokens, default=0)
        if (
            sf.kind == "entity"
            and sf.dim == "name"
            and (first == 0 or span.tokens[first - 1].text in (",", ";", ":"))  # the span's subject
            and sf.value not in claim.words
            and k < len(span.tokens)
            and words_match(span.tokens[k].low, verb)
        ):
            return sf, False
    return None


#: Words that open a sentence without naming anything ("Despite its stripes, the okapi …").
OPENERS = frozenset(
    "despite unlike following according meanwhile instead today additionally furthermore moreover "
    "thereafter otherwise nevertheless nonetheless besides afterwards".split()
)
