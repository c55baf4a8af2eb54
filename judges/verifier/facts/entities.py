"""Name facts (proper nouns, acronyms) and aliases: an acronym or a clipped word for a longer name."""

from __future__ import annotations

import re

from .fact import Fact
from .lexicon import (
    _CURRENCY_CODES,
    _DIRECTION_WORDS,
    _FILLER,
    _MONTHS,
    _NEGATIONS,
    _PARTIAL,
    _UNITS,
    _UNIVERSAL,
    STOPWORDS,
)
from .tokens import Token, name_letter

_NOT_ENTITIES = frozenset("""i i'm i've i'd i'll ok okay yes no note warning tip example step""".split())
_ENTITY_CONNECTORS = frozenset("of upon de del der van von da di la le".split())


def _extract_entities(
    tokens: list[Token], used: set[int], facts: list[Fact], text: str, proper: frozenset[str] | set[str]
) -> None:
    n = len(tokens)
    is_ent = [False] * n
    for i, t in enumerate(tokens):
        if i in used or t.kind != "word":
            continue
        low = t.low
        if low in _NOT_ENTITIES or low in _UNITS and not t.text.isupper() or low in _MONTHS and t.text[0].isupper():
            continue
        if low in _CURRENCY_CODES:
            continue
        if name_letter(tokens, i):  # "Model A"
            is_ent[i] = True
            continue
        has_inner_cap = any(c.isupper() for c in t.text[1:]) and not t.text.isupper()
        letters = t.text.replace(".", "")  # "U.S." is the acronym "US"
        acronym = t.text.isupper() and len(letters) >= 2 and letters.isalpha()
        if has_inner_cap or acronym:
            if low in _UNITS and low not in proper:
                continue  # "GB", "MB" are units
            is_ent[i] = True
            continue
        if not t.text[0].isupper():
            continue
        if (
            low in STOPWORDS
            or low in _FILLER
            or low in _NEGATIONS
            or low in _DIRECTION_WORDS
            or low in _UNIVERSAL
            or low in _PARTIAL
        ):
            continue
        if not t.initial:
            is_ent[i] = True
            continue
        # sentence-initial capital: a name only if the texts use it as one, or a capitalised
        # word or a number follows it ("Pierre Curie", "Apollo 11")
        nxt = tokens[i + 1] if i + 1 < n else None
        if (
            low in proper
            or (nxt is not None and nxt.kind == "word" and nxt.text[0].isupper() and nxt.low not in STOPWORDS)
            or (i + 1 < n and name_letter(tokens, i + 1))
        ):
            is_ent[i] = True
    i = 0
    while i < n:
        if not is_ent[i]:
            i += 1
            continue
        j = i
        # a possessive ends a name: "Botticelli's Birth of Venus" is Botticelli and the painting
        while (
            j + 1 < n
            and not tokens[j].text.lower().endswith(("'s", "’s"))
            and (is_ent[j + 1] or (tokens[j + 1].low in _ENTITY_CONNECTORS and j + 2 < n and is_ent[j + 2]))
        ):
            j += 1
        idx = tuple(k for k in range(i, j + 1) if is_ent[k])
        phrase = text[tokens[i].start : tokens[j].end]
        used.update(range(i, j + 1))
        for k in idx:
            # a lone acronym ("API", "RAM", "UTC") is as often a common noun as a name:
            # it can conflict, but its absence alone does not make a claim unverifiable; one with
            # digits ("RS256", "ARM64") names one particular thing, whose absence does
            acronym_only = len(idx) == 1 and tokens[k].text.isupper() and tokens[k].text.isalpha()
            facts.append(
                Fact(
                    "entity",
                    tokens[k].low,
                    phrase,
                    tokens[k].start,
                    tokens[k].end,
                    dim="name",
                    weak=acronym_only,
                    tokens=idx,
                )
            )
        i = j + 1


_ACRONYM_SKIP = frozenset({"of", "the", "for", "and", "on", "in", "&"})


def _initials(words: list[str]) -> str:
    return "".join(w[0] for w in words if w and w not in _ACRONYM_SKIP)


def is_alias(short: str, long: str) -> bool:
    """Whether one name is a short form of the other: an acronym ("WHO" for "World Health
    Organization") or a clipped first word ("Fed" for "Federal Reserve"). Without this a
    source's full name reads as a different entity and a faithful claim as a contradiction."""
    a, b = short.strip(), long.strip()
    if len(a) > len(b):
        a, b = b, a
    a_words, b_words = a.lower().split(), b.lower().split()
    if len(a_words) != 1 or len(b_words) < 2 or len(a) < 2:
        return False
    word = a_words[0].replace(".", "")  # "U.S." for "United States"
    if a.isupper() and _initials(b_words) == word:
        return True
    return len(word) >= 3 and b_words[0].startswith(word) and b_words[0] != word


#: Peoples and languages whose names the prefix of their place does not give ("Welsh" and
#: "Wales"; "Japanese" and "Japan" share theirs).
_DEMONYMS = {
    "welsh": ("wales",),
    "french": ("france",),
    "dutch": ("netherlands", "holland"),
    "danish": ("denmark",),
    "irish": ("ireland",),
    "filipino": ("philippines",),
    "british": ("britain", "uk"),
    "swiss": ("switzerland",),
    "greek": ("greece",),
    "spanish": ("spain",),
    "english": ("england",),
    "scottish": ("scotland",),
    "scots": ("scotland",),
    "norwegian": ("norway",),
    "peruvian": ("peru",),
}
_PLACES = {place: people for people, places in _DEMONYMS.items() for place in places}


def place_names(word: str) -> tuple[str, ...]:
    """The other name of a people's place or a place's people ("welsh" -> "wales", "wales" ->
    "welsh"), as the text may write either."""
    word = word.lower()
    return _DEMONYMS.get(word, ()) + ((_PLACES[word],) if word in _PLACES else ())


def _alias_in_text(name: str, text_low: str) -> bool:
    """A one-word name whose long form (acronym expansion or clipped word) stands in the text."""
    if not name or " " in name.strip():
        return False
    word = name.strip().lower().replace(".", "")
    tokens = re.findall(r"[a-z&]+", text_low)
    if name.isupper() and 2 <= len(word) <= 8:
        letters = [t for t in tokens if t not in _ACRONYM_SKIP]
        for i in range(len(letters) - len(word) + 1):
            if "".join(t[0] for t in letters[i : i + len(word)]) == word:
                return True
    return len(word) >= 3 and any(t.startswith(word) and len(t) > len(word) + 1 for t in tokens)
