"""The citation contract (docs/citations.md): are an answer's citations honest?

A citation is a plain string (a source identifier, as docs/grounding-policies.md has it) or an object
``{"source_id": ..., "quote": ...}``. Three checks, each naming the citation that failed:

- a quote that is given must be found in the cited source's text, after normalising whitespace,
  case and quote characters; with ``citation_quotes: required`` every citation must carry one;
- with ``citations_must_resolve`` every citation must name a source the run reported; a quoted
  citation must resolve in any case, since its quote can only be checked against a known text;
- there may be at most ``max_citations``.

Sources are what the services layer hands over in ``RunState.sources``: dicts with ``id`` and
``text`` (a grounding report's sources, and the results of the run's retrieval spans). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

MISSING_QUOTE = "missing_quote"
UNRESOLVED = "unresolved"
QUOTE_NOT_FOUND = "quote_not_found"

# How many single-citation reasons one evaluation spells out, and how many failures its metadata
# keeps: a run citing a thousand fabricated sources must not produce a megabyte of reason.
MAX_LISTED_REASONS = 5
MAX_FAILURES = 50
MAX_SOURCE_TEXT = 500
MAX_LABEL = 100

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u02bc": "'",
        "\u0060": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
    }
)


# Every grounding policy checks the same citations against the same sources: at after_workflow
# of a long run that is thousands of source texts, normalised once per policy without this.
@lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """Case-folded, curly quotes made straight, every whitespace run one space."""
    return " ".join(text.casefold().translate(_QUOTES).split())


def _normalised_quote(quote: str) -> str:
    # A quote sent with its own quotation marks ('"rates rose"') is the same quote.
    return normalise(quote).strip("'\" ")


def label(citation) -> str:
    """How a reason names a citation: its source id, or the string itself."""
    text = citation.get("source_id", "") if isinstance(citation, dict) else str(citation)
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _source_texts(sources: Iterable) -> dict[str, list[str]]:
    texts: dict[str, list[str]] = {}
    for source in sources:
        if isinstance(source, dict):
            ident = source.get("id")
            if isinstance(ident, str) and ident:
                text = source.get("text")
                entry = texts.setdefault(ident, [])
                # A reported source resolved from a retrieval result is the same text twice.
                if isinstance(text, str) and text and text not in entry:
                    entry.append(text)
    return texts


def _excerpt(texts: list[str]) -> str:
    text = "\n\n".join(texts)
    return text if len(text) <= MAX_SOURCE_TEXT else text[: MAX_SOURCE_TEXT - 1] + "…"


def _reason(problem: str, name: str) -> str:
    if problem == MISSING_QUOTE:
        return f'Citation "{name}" has no quote (quotes required)'
    if problem == UNRESOLVED:
        return f'Citation "{name}" does not resolve to a retrieved source'
    return f'Citation "{name}" quote not found in source'


def check_citations(rules: dict, citations, sources) -> tuple[list[str], list[dict]]:
    """(reasons, failures) for ``citations`` under the citation rules of ``rules``.

    Reasons come in the seed's style and order: the count first, then one per failing citation
    (the first MAX_LISTED_REASONS, then a count of the rest). Failures are for the metadata:
    ``{"citation", "problem", "source_id", "source_text"?}``. A citation cited twice with the
    same quote is checked once.
    """
    reasons: list[str] = []
    maximum = rules["max_citations"]
    if maximum is not None and len(citations) > maximum:
        reasons.append(f"Citations ({len(citations)}) exceed maximum ({maximum})")
    quotes_required = rules["citation_quotes"] == "required"
    must_resolve = rules["citations_must_resolve"]
    if not (quotes_required or must_resolve):
        # The common case, kept cheap: with the rules off only quoted citations need a look.
        for citation in citations:
            if type(citation) is dict and citation.get("quote"):
                break
        else:
            return reasons, []

    failures: list[dict] = []
    texts: dict[str, list[str]] | None = None
    normalised: dict[str, list[str]] = {}
    seen = set()
    for citation in citations:
        if type(citation) is dict:
            ident, quote = citation.get("source_id"), citation.get("quote") or None
        elif type(citation) is str:
            ident, quote = citation, None
        else:
            continue
        if not isinstance(ident, str) or not ident or (quote is not None and not isinstance(quote, str)):
            continue
        key = (ident, quote)
        if key in seen:
            continue
        seen.add(key)
        if quote is None:
            if quotes_required:
                failures.append({"citation": citation, "problem": MISSING_QUOTE, "source_id": ident})
            if not must_resolve:
                continue
        if texts is None:
            texts = _source_texts(sources)
        found = texts.get(ident)
        if found is None:
            failures.append({"citation": citation, "problem": UNRESOLVED, "source_id": ident})
        elif quote is not None:
            wanted = _normalised_quote(quote)
            if ident not in normalised:
                normalised[ident] = [normalise(text) for text in found]
            if not wanted or not any(wanted in text for text in normalised[ident]):
                failures.append(
                    {
                        "citation": citation,
                        "problem": QUOTE_NOT_FOUND,
                        "source_id": ident,
                        "source_text": _excerpt(found),
                    }
                )
    listed = failures[:MAX_LISTED_REASONS]
    reasons += [_reason(f["problem"], label(f["citation"])) for f in listed]
    if len(failures) > len(listed):
        reasons.append(f"and {len(failures) - len(listed)} more citation problems")
    return reasons, failures


def failures_metadata(failures: list[dict]) -> dict:
    if not failures:
        return {}
    data: dict[str, object] = {"citation_failures": failures[:MAX_FAILURES]}
    if len(failures) > MAX_FAILURES:
        data["citation_failures_total"] = len(failures)
    return data
