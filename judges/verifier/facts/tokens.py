"""Tokens of a text: ISO dates, clock times, numbers, words and symbols, sentence openers marked."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property

#: A letter of any script ("El Niño", "Zürich", "São Paulo" are whole words), but not the
#: superscript, subscript and fraction digits that Unicode counts as word characters ("km²" is
#: "km" then "²", as before).
_LETTER = "[^\\W\\d_\u00b2\u00b3\u00b9\u00bc-\u00be\u2070-\u209f\u2150-\u218f]"
_WORD = f"{_LETTER}(?:{_LETTER}|[0-9])*"
_TAIL = f"(?:['’]{_LETTER}+)?"

_TOKEN_RE = re.compile(
    r"(?P<iso>\d{4}-\d{2}-\d{2})"
    r"|(?P<time>\d{1,2}:\d{2}(?::\d{2})?)"
    r"|(?P<ampm>[aApP]\.[mM]\.?)"
    # the "v" of a release number is a word of its own ("v2.7.0" is release 2.7.0), and so is the
    # part of a decade or a year that "mid-1480s", "early-2000s", "late-2024" name
    r"|(?P<release>[vV](?=\d+\.\d+)|(?i:mid|early|late)(?=-\d{4}s?\b))"
    # thousands set off by a plain space, as much of Europe writes them ("12 408 votes"); a group of
    # three digits that runs on into a word or a dash is another number ("5 100-metre races")
    r"|(?P<spaced>\d{1,3}(?: \d{3})+(?![\w\-–]|[.,]\d))"
    # thousands may be set off by a no-break or thin space ("10\u00a0000", SI style)
    r"|(?P<num>\d+(?:[.,]\d+|[\u00a0\u202f\u2009]\d{3}(?!\d))*)"
    # "U.S.", "U.K.": one word, compared without its dots (Token.low)
    rf"|(?P<word>(?:[A-Z]\.){{2,}}(?![A-Za-z])|{_WORD}{_TAIL}(?:-(?:{_LETTER}|[0-9])+{_TAIL})*)"
    r"|(?P<sym>°[CFcf]?|[$€£¥%~/–—-]|\S)"
)


@dataclass
class Token:
    text: str
    kind: str  # iso | time | ampm | num | word | sym
    start: int
    end: int
    initial: bool = False  # opens a sentence

    @cached_property
    def low(self) -> str:
        """The word as compared: lower case, a possessive "'s" dropped, the dots of "U.S."
        dropped, accents folded ("José" and "Jose", "São Paulo" and "Sao Paulo" are the same
        name)."""
        t = self.text.lower().replace("’", "'")
        if t.endswith("'s"):
            t = t[:-2]
        if t.endswith(".") and self.kind == "word":
            t = t.replace(".", "")  # "U.S." is "US"
        return t if t.isascii() else fold_accents(t)

    @property
    def is_cap(self) -> bool:
        return self.kind == "word" and self.text[0].isupper()


def fold_accents(text: str) -> str:
    """The text without its combining marks ("é" -> "e"); letters without a decomposition ("ø",
    "ß") stay as they are."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "sym"
        kind = "num" if kind == "spaced" else "word" if kind == "release" else kind
        tokens.append(Token(m.group(), kind, m.start(), m.end()))
    # Mark sentence-initial tokens (first word, and words after . ! ? : ; or an opening quote).
    expect = True
    for t in tokens:
        if t.kind == "sym":
            if t.text in ".!?:;•\n" or t.text in "\"“(['‘":
                expect = True if t.text in ".!?:;•" or expect else expect
            continue
        if expect:
            t.initial = True
        expect = False
    return tokens


def name_letter(tokens: list[Token], i: int) -> bool:
    """A capital letter that ends a name ("Model A", "Plan B", "Vitamin C"), not the article "A"."""
    t = tokens[i]
    if t.kind != "word" or len(t.text) != 1 or not t.text.isupper() or t.text == "I" or i == 0:
        return False
    prev = tokens[i - 1]
    return prev.is_cap and len(prev.text) > 1 and prev.end + 1 == t.start
