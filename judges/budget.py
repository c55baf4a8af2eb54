"""Bounded verifier work per request (docs/reliability.md, "Bounded work per request").

The verifier's cost grows with the characters of the sources it reads (every sentence is embedded
and analysed) and with the claims it aligns against them. A ~1 MB check once held a worker for
~28 s of CPU. Two kinds of limit, all settings with defaults:

Hard limits (the request is refused, nothing is computed; ``POST /api/v1/grounding/check/`` only):
  ``GROUNDING_CHECK_MAX_BODY_BYTES`` bytes of body, from Content-Length before the body is read;
  ``GROUNDING_MAX_SOURCE_CHARS`` characters of all sources together. Over either, a 413 naming it.
  (The text is limited by its field, 50,000 characters, and the body by ``MAX_BODY_BYTES``.)

Soft budget (the check runs on what fits; the claims left over are ``unverifiable`` and a warning
says which limit cut them; used by the check endpoint and by policies' verifier alike):
  ``VERIFIER_MAX_SOURCE_CHARS`` characters of sources read (the best-scored first, as the
  verifier ranks them; the source that crosses the budget is cut at a sentence boundary);
  ``VERIFIER_MAX_CLAIMS`` claims checked, in the order they appear;
  ``VERIFIER_MAX_PAIRS`` claim x source-sentence pairs scored (fewer claims when the sources
  are long);
  ``VERIFIER_MAX_CLAIM_CHARS`` characters of claims checked, the claims in order (a claim's
  alignment costs its values times the values of each sentence it is set against: one
  2,000-character "sentence" of numbers, a table flattened into the text, held a worker for
  minutes; a claim longer than the budget by itself is not checked);
  ``VERIFIER_MAX_WORK`` weighted pairings of the fact alignment (judges/verifier/facts/work.py):
  characters do not bound CPU (a claim of 2,900 characters of numbers against a source as dense
  took ~10 s within every character limit); pairings do. A claim whose alignment does not fit
  what is left is ``unverifiable`` with the reason ``NOT_CHECKED``, and a warning counts them.

The defaults keep one check under about a second of CPU on a 2-core machine (the measured figures
are in docs/changelog.md). Only the public verifier API is used: the budget is applied to its input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from .verifier import (
    CONTRADICTED,
    UNVERIFIABLE,
    ClaimVerdict,
    GroundingCheck,
    VerifierConfig,
    check_grounding,
    extract_claims,
    split_sentences,
)
from .verifier.facts.work import NOT_CHECKED, Work
from .verifier.verifier import REASON_CONTRADICTION, REASON_UNVERIFIABLE, source_id


class OverLimit(Exception):
    """A hard limit: the request is refused. ``field`` names what was too large, ``message`` why."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Budget:
    max_source_chars: int
    max_claims: int
    max_pairs: int
    max_claim_chars: int
    max_work: int = 300_000

    @classmethod
    def from_settings(cls) -> Budget:
        return cls(
            settings.VERIFIER_MAX_SOURCE_CHARS,
            settings.VERIFIER_MAX_CLAIMS,
            settings.VERIFIER_MAX_PAIRS,
            settings.VERIFIER_MAX_CLAIM_CHARS,
            settings.VERIFIER_MAX_WORK,
        )

    def claims_allowed(self, claims: list[str], sentence_count: int) -> tuple[int, str]:
        """How many of ``claims``, in order, are checked, and the limit that stops the rest."""
        by_count = min(self.max_claims, max(1, self.max_pairs // max(1, sentence_count)))
        by_chars = claims_within(claims[:by_count], self.max_claim_chars)
        if by_chars < by_count:
            return by_chars, "VERIFIER_MAX_CLAIM_CHARS"
        return by_count, "VERIFIER_MAX_CLAIMS" if by_count == self.max_claims else "VERIFIER_MAX_PAIRS"


def as_paragraphs(claims: list[str]) -> str:
    """``claims`` as one text in which the verifier finds exactly these claims again: one a paragraph."""
    return "\n\n".join(claims)


def claims_within(claims: list[str], max_chars: int) -> int:
    """How many of ``claims``, in order, fit in ``max_chars`` characters together."""
    room, count = max_chars, 0
    for claim in claims:
        room -= len(claim)
        if room < 0:
            break
        count += 1
    return count


def _text_of(source) -> str:
    return source if isinstance(source, str) else (source.get("text") or "")


def enforce_body_limit(content_length) -> None:
    """The check's own body limit, read from Content-Length before anything parses the body."""
    try:
        length = int(content_length or 0)
    except ValueError:
        return  # BodySizeLimitMiddleware answers a malformed Content-Length
    limit = settings.GROUNDING_CHECK_MAX_BODY_BYTES
    if length > limit:
        raise OverLimit(
            "body",
            f"The request body is {length} bytes; this endpoint's limit is {limit} bytes "
            f"(GROUNDING_CHECK_MAX_BODY_BYTES).",
        )


def enforce_hard_limits(sources) -> None:
    total = sum(len(_text_of(s)) for s in sources)
    limit = settings.GROUNDING_MAX_SOURCE_CHARS
    if total > limit:
        raise OverLimit(
            "sources", f"The sources hold {total} characters; the limit is {limit} (GROUNDING_MAX_SOURCE_CHARS)."
        )


def _ranked(sources, limit: int) -> list[dict]:
    """The sources the verifier would read, in its order: best score first, then as given."""
    items: list[tuple[int, dict[str, Any]]] = []
    for i, s in enumerate(sources):
        item: dict[str, Any] = {"text": s} if isinstance(s, str) else dict(s)
        item["id"] = source_id(s, i)
        if isinstance(item.get("text"), str) and item["text"].strip():
            items.append((i, item))
    items.sort(key=lambda p: (p[1].get("score") is None, -(p[1].get("score") or 0.0), p[0]))
    return [item for _, item in items][: max(1, limit)]


def _cut(text: str, room: int) -> str:
    """``text`` cut to at most ``room`` characters, at the end of a sentence when there is one."""
    kept = ""
    for sentence in split_sentences(text):
        if sentence.end > room:
            break
        kept = text[: sentence.end]
    return kept or text[:room]


def _fit_sources(sources, config: VerifierConfig, budget: Budget) -> tuple[list[dict], int, bool]:
    """(the sources within the character budget, their sentence count, whether any was cut)."""
    room, kept, cut, sentences = budget.max_source_chars, [], False, 0
    for item in _ranked(sources, config.max_sources_per_claim):
        if room <= 0:
            cut = True
            break
        text = item["text"]
        if len(text) > room:
            text, cut = _cut(text, room), True
        kept.append({**item, "text": text})
        sentences += len(split_sentences(text))
        room -= len(text)
    return kept, sentences, cut


def _unchecked(claim: str, reason: str) -> ClaimVerdict:
    return ClaimVerdict(claim=claim, verdict=UNVERIFIABLE, confidence=0.0, best_source=None, reason=reason)


def _summary(claims: list[ClaimVerdict]) -> str:
    supported = sum(1 for c in claims if c.verdict != UNVERIFIABLE and c.verdict != CONTRADICTED)
    contradicted = sum(1 for c in claims if c.verdict == CONTRADICTED)
    unverifiable = sum(1 for c in claims if c.verdict == UNVERIFIABLE)
    text = f"{supported}/{len(claims)} claims supported"
    if contradicted:
        text += f", {contradicted} contradicted"
    if unverifiable:
        text += f", {unverifiable} unverifiable"
    return text


def regraded(verdicts: list[ClaimVerdict], config: VerifierConfig, method: str) -> GroundingCheck:
    """A check of these verdicts, graded as the verifier grades its own: grounded, reason code, summary.

    For verdicts changed after the verifier ran (the budget's unchecked claims, the LLM's escalated ones).
    """
    result = GroundingCheck(grounded=True, claims=verdicts, summary=_summary(verdicts), method=method)
    if result.contradicted_count:
        result.grounded, result.reason_code = False, REASON_CONTRADICTION
    elif verdicts and result.unverifiable_ratio > config.max_unverifiable_ratio:
        result.grounded, result.reason_code = False, REASON_UNVERIFIABLE
    return result


def budgeted_check(
    text: str, sources, config: VerifierConfig, budget: Budget | None = None
) -> tuple[GroundingCheck, list[str]]:
    """``check_grounding`` within the budget: (the result, warnings naming each limit that cut work)."""
    budget = budget or Budget.from_settings()
    fitted, sentence_count, sources_cut = _fit_sources(sources or [], config, budget)
    warnings = []
    if sources_cut:
        warnings.append(
            f"Verifier read only the first {budget.max_source_chars} characters of the sources "
            f"(VERIFIER_MAX_SOURCE_CHARS)."
        )
    claims = extract_claims(text or "")
    allowed, limit_name = budget.claims_allowed(claims, sentence_count)
    work = Work(budget.max_work)
    if not fitted or len(claims) <= allowed:
        result = check_grounding(text, fitted if fitted else sources, config, work=work)
        return result, warnings + work_warnings(result)

    reason = f"not checked: over the request's verifier budget ({limit_name})"
    warnings.append(
        f"Verifier checked the first {allowed} of {len(claims)} claims; the other "
        f"{len(claims) - allowed} are unverifiable ({limit_name})."
    )
    checked = check_grounding(as_paragraphs(claims[:allowed]), fitted, config, work=work) if allowed else None
    done = list(checked.claims) if checked else []
    verdicts = done + [_unchecked(c, reason) for c in claims[allowed:]]
    method = checked.method if checked else ("nli" if config.nli_model_dir else "embedding+facts")
    return regraded(verdicts, config, method), warnings + (work_warnings(checked) if checked else [])


def work_warnings(result: GroundingCheck) -> list[str]:
    """The warning that counts the claims the work budget left unchecked, if any."""
    over = sum(1 for c in result.claims if c.reason == NOT_CHECKED)
    if not over:
        return []
    return [
        f"Verifier left {over} of {len(result.claims)} claims unchecked: their fact alignment is over "
        f"the request's work budget (VERIFIER_MAX_WORK)."
    ]
