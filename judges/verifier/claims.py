"""Claim extraction: sentence splitting and the verifier contract's (docs/verifier.md) non-factual filters.

Tier 1 of the verifier contract's (docs/verifier.md) ClaimExtractor (heuristic mode; no LLM decomposition here):

1. Fenced code blocks (triple backticks or tildes) are dropped whole; inline code
   keeps its text without the backticks.
2. The rest is split on sentence boundaries (``.``, ``?``, ``!``, newlines), without
   splitting inside decimals (``3.5``), version numbers, common abbreviations
   (``e.g.``, ``i.e.``, ``Dr.``, ``a.m.``) or initials (``J. K. Rowling``).
3. Non-factual sentences are filtered out:

   * questions -- ends with ``?``
   * hedges -- starts with "I think", "maybe", "perhaps", "it seems", "I believe"
   * meta -- "I hope this helps", "let me know if", "feel free to", "here's"
   * greetings -- "hello", "hi there", "sure!", "great question", "of course"

   A greeting that only opens a longer sentence ("Of course, the limit is 1000
   requests.") is stripped and the rest is kept as the claim.
4. Fragments of fewer than three words (headings, "Summary:", "Yes.") and lines
   ending in a colon (lead-ins to lists) are not claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Sentence",
    "split_sentences",
    "strip_code_blocks",
    "non_factual_reason",
    "extract_claims",
]

_FENCE_RE = re.compile(r"(^|\n)[ \t]*(```|~~~)[^\n]*\n.*?(\n[ \t]*\2[ \t]*(?=\n|$)|$)", re.S)
_INLINE_CODE_RE = re.compile(r"`([^`\n]*)`")

# Abbreviations after which a full stop does not end a sentence.
_ABBREVIATIONS = {
    "e.g",
    "i.e",
    "etc",
    "vs",
    "cf",
    "al",
    "approx",
    "ca",
    "circa",
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "sr",
    "jr",
    "st",
    "mt",
    "no",
    "nos",
    "fig",
    "figs",
    "vol",
    "pp",
    "p",
    "ed",
    "eds",
    "inc",
    "ltd",
    "co",
    "corp",
    "dept",
    "est",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "a.m",
    "p.m",
    "u.s",
    "u.k",
    "e.u",
    "u.n",
    "ph.d",
    "min",
    "max",
    "avg",
    "incl",
    "excl",
    "resp",
    "gen",
    "gov",
    "rev",
    "lt",
    "col",
    "sgt",
}
# Abbreviations that usually close a sentence when a capitalised word follows.
_SENTENCE_FINAL_ABBREVIATIONS = {"etc", "a.m", "p.m", "inc", "ltd", "co", "corp"}

_BOUNDARY_RE = re.compile(r"([.!?]+)([\"'”’)\]]*)(\s+|$)")
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|[a-z]\))\s+")
_HEADING_RE = re.compile(r"^\s*#{1,6}\s+")

_HEDGE_PREFIXES = ("i think", "maybe", "perhaps", "it seems", "i believe")
_META_MARKERS = ("i hope this helps", "let me know if", "feel free to")
_META_PREFIXES = ("here's", "here’s", "here is", "here are")
_GREETING_PREFIXES = (
    "hello",
    "hi there",
    "hi,",
    "hi!",
    "hey there",
    "sure!",
    "sure,",
    "great question",
    "of course",
    "certainly!",
    "absolutely!",
)


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    end: int


def strip_code_blocks(text: str) -> str:
    """Replace fenced code blocks with a newline and unwrap inline code."""
    text = _FENCE_RE.sub("\n", text)
    return _INLINE_CODE_RE.sub(r"\1", text)


def _is_abbreviation(chunk: str, dot_index: int) -> bool:
    """True when the full stop at ``dot_index`` belongs to an abbreviation or initial."""
    j = dot_index
    while j > 0 and (chunk[j - 1].isalpha() or chunk[j - 1] == "."):
        j -= 1
    word = chunk[j:dot_index].lower()
    if not word:
        return False
    if word in _ABBREVIATIONS:
        return True
    # A single capital letter: an initial ("J. R. R. Tolkien"), or a.m.-style dotted letters.
    if len(word) == 1 and chunk[j].isupper():
        return True
    return bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", word))


def _split_line(line: str, offset: int) -> list[Sentence]:
    out: list[Sentence] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(line):
        punct = m.group(1)
        end_of_sentence = m.end(2)
        nxt = line[m.end() : m.end() + 1]
        if punct == ".":
            dot = m.start(1)
            if _is_abbreviation(line, dot):
                j = dot
                while j > 0 and (line[j - 1].isalpha() or line[j - 1] == "."):
                    j -= 1
                word = line[j:dot].lower()
                if not (word in _SENTENCE_FINAL_ABBREVIATIONS and nxt[:1].isupper()):
                    continue
                if word in ("a.m", "p.m") and re.match(r"[A-Z]{2,5}\b", line[m.end() :]):
                    continue  # "6 p.m. CET": a time zone, not a new sentence
            # "3. " inside a line after a number (a list item or an ordinal) is not an end
            # unless something sentence-like follows.
            if nxt and not (nxt.isupper() or nxt.isdigit() or nxt in "\"'“‘([*-"):
                continue
        piece = line[start:end_of_sentence].strip()
        if piece:
            lead = len(line[start:end_of_sentence]) - len(line[start:end_of_sentence].lstrip())
            out.append(Sentence(piece, offset + start + lead, offset + start + lead + len(piece)))
        start = m.end()
    rest = line[start:]
    if rest.strip():
        lead = len(rest) - len(rest.lstrip())
        out.append(Sentence(rest.strip(), offset + start + lead, offset + start + lead + len(rest.strip())))
    return out


def split_sentences(text: str) -> list[Sentence]:
    """Split text into sentences (no filtering). Offsets refer to ``text`` as given."""
    sentences: list[Sentence] = []
    pos = 0
    for line in text.split("\n"):
        stripped = _HEADING_RE.sub("", line)
        stripped = _BULLET_RE.sub("", stripped)
        shift = len(line) - len(stripped)
        sentences.extend(_split_line(stripped, pos + shift))
        pos += len(line) + 1
    return sentences


def _normalise(sentence: str) -> str:
    s = sentence.strip().lower()
    s = s.replace("’", "'")
    return re.sub(r"\s+", " ", s).lstrip("\"'“*_ ")


def non_factual_reason(sentence: str) -> str | None:
    """Why a sentence is not a factual claim (``question``, ``hedge``, ``meta``,
    ``greeting``, ``fragment``), or ``None`` when it is one."""
    s = _normalise(sentence)
    if not s:
        return "fragment"
    if s.rstrip("\"'”’)] ").endswith("?"):
        return "question"
    if s.startswith(_HEDGE_PREFIXES):
        return "hedge"
    if any(marker in s for marker in _META_MARKERS) or s.startswith(_META_PREFIXES):
        return "meta"
    if s.startswith(_GREETING_PREFIXES):
        rest = _strip_greeting(sentence)
        if rest is None:
            return "greeting"
    if s.rstrip().endswith(":"):
        return "fragment"
    if len(re.findall(r"[\w][\w'’.,%-]*", s)) < 3:
        return "fragment"
    return None


def _strip_greeting(sentence: str) -> str | None:
    """The factual remainder after a leading greeting, or None if nothing is left."""
    s = sentence.strip()
    low = s.lower()
    for prefix in _GREETING_PREFIXES:
        if low.startswith(prefix):
            rest = s[len(prefix) :].lstrip(" ,!.—-:")
            words = re.findall(r"[\w][\w'’.,%-]*", rest)
            if len(words) >= 3:
                return rest[0].upper() + rest[1:]
            return None
    return s


def extract_claims(text: str) -> list[str]:
    """Factual claims of ``text``, in order: code blocks dropped, sentences split,
    questions / hedges / meta-commentary / greetings / fragments removed."""
    if not text or not text.strip():
        return []
    claims: list[str] = []
    for sentence in split_sentences(strip_code_blocks(text)):
        candidate = sentence.text
        low = _normalise(candidate)
        if low.startswith(_GREETING_PREFIXES):
            rest = _strip_greeting(candidate)
            if rest is None:
                continue
            candidate = rest
        if non_factual_reason(candidate) is None:
            claims.append(candidate)
    return claims
