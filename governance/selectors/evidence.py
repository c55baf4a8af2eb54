"""Evidence inside an evaluation's metadata: the verifier's verdicts, self-contradictions, citations.

The engine and the judges write these shapes, but metadata is stored JSON that an older row or a
custom category may fill with anything: each reader takes what it recognises and drops the rest,
so a page shows less rather than failing. Nothing here queries the database.
"""

from dataclasses import dataclass, field
from numbers import Real

VERDICTS = ("supported", "contradicted", "unverifiable")
CITATION_PROBLEMS = {
    "quote_not_found": "Quote not found in the source",
    "unresolved": "Not a source the run reported or retrieved",
    "missing_quote": "No quote (the policy requires one)",
}
MAX_SHOWN_CLAIMS = 200


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _number(value) -> float | None:
    return value if _is_number(value) else None


def _text_of(value) -> str:
    return value if isinstance(value, str) else ""


def _list_of_dicts(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


@dataclass
class SourceSpan:
    """The source sentence a claim was judged against, and the source it came from."""

    id: str
    span: str
    content: str
    score: float | None  # how closely the span matches the claim (similarity or entailment)
    relevance: float | None  # the retrieval score the agent gave the source, if any


@dataclass
class ClaimVerdict:
    claim: str
    verdict: str  # one of VERDICTS, or "unknown"
    confidence: float | None
    reason: str
    kind: str
    best: SourceSpan | None
    by_llm: bool = False  # the verifier's LLM escalation gave this verdict (docs/verifier.md)
    undecided: bool = False  # the local verifier reached neither threshold (the band the cascade escalates)
    odds: str = ""  # the local probabilities of supported and contradicted, for an undecided claim
    escalation: str = ""  # what the LLM escalation did to this claim: its verdict, latency and cost, or why not

    @property
    def failed(self) -> bool:
        return self.verdict in ("contradicted", "unverifiable")


@dataclass
class Verification:
    claims: list[ClaimVerdict]
    hidden: int  # claims beyond MAX_SHOWN_CLAIMS
    supported: int
    contradicted: int
    unverifiable: int
    unverifiable_ratio: float | None
    summary: str
    method: str
    grounded: bool | None
    escalation: str = ""  # one line on the LLM escalation's call, when there was one

    @property
    def total(self) -> int:
        return self.supported + self.contradicted + self.unverifiable

    @property
    def failed(self) -> int:
        return self.contradicted + self.unverifiable


@dataclass
class Contradiction:
    claim_a: str
    claim_b: str
    reason: str


@dataclass
class Consistency:
    contradictions: list[Contradiction]
    claims_checked: int | None
    total: int


@dataclass
class CitationFailure:
    source_id: str
    quote: str | None
    problem: str
    source_text: str | None  # what the quote was checked against (quote_not_found only)

    @property
    def label(self) -> str:
        return CITATION_PROBLEMS.get(self.problem, self.problem or "Citation problem")


@dataclass
class CitationFailures:
    items: list[CitationFailure]
    total: int

    @property
    def hidden(self) -> int:
        return max(0, self.total - len(self.items))


@dataclass
class EvaluationEvidence:
    verification: Verification | None = None
    consistency: Consistency | None = None
    citations: CitationFailures | None = None
    reason_codes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.verification or self.consistency or self.citations)


def citation_parts(citation) -> tuple[str, str | None]:
    """(source id, quote) of a citation sent as a string or as {source_id, quote}."""
    if isinstance(citation, str):
        return citation, None
    if isinstance(citation, dict):
        quote = citation.get("quote")
        ident = citation.get("source_id")
        return (ident if isinstance(ident, str) else ""), (quote if isinstance(quote, str) and quote else None)
    return "", None


def _source_span(raw) -> SourceSpan | None:
    if not isinstance(raw, dict):
        return None
    span, content = _text_of(raw.get("span")), _text_of(raw.get("content"))
    ident = raw.get("id")
    if not (span or content or ident):
        return None
    return SourceSpan(
        id=str(ident) if ident is not None else "",
        span=span or content,
        content=content,
        score=_number(raw.get("score")),
        relevance=_number(raw.get("relevance")),
    )


def _escalation_line(raw) -> str:
    """'gpt-4o-mini: 3 of 3 undecided claims, 412 ms, $0.00012' (or why the local verdicts stayed)."""
    if not isinstance(raw, dict) or raw.get("status") in (None, "nothing_to_escalate"):
        return ""
    model = _text_of(raw.get("model"))
    if raw.get("status") != "ok":
        return f"{model}: not used ({_text_of(raw.get('status'))}); local verdicts kept"
    line = f"{model}: {raw.get('escalated', 0)} of {raw.get('undecided', 0)} undecided claims"
    if raw.get("cached"):
        return line + ", from the cache"
    if _is_number(raw.get("latency_ms")):
        line += f", {round(raw['latency_ms'])} ms"
    if _is_number(raw.get("cost_usd")):
        line += f", ${raw['cost_usd']:.5f}"
    return line


def _claim_escalation_line(raw) -> str:
    """'gpt-4o-mini said supported (0.9), 412 ms, $0.00004' or why the local verdict was kept."""
    if not isinstance(raw, dict):
        return ""
    model = _text_of(raw.get("model"))
    if not raw.get("llm"):
        return f"{model}: {_text_of(raw.get('kept')) or 'local verdict kept'}"
    line = f"{model} said {_text_of(raw.get('llm'))}"
    if _is_number(raw.get("confidence")):
        line += f" ({raw['confidence']:g})"
    if raw.get("cached"):
        return line + ", from the cache"
    if _is_number(raw.get("latency_ms")):
        line += f", {round(raw['latency_ms'])} ms"
    if _is_number(raw.get("cost_usd")):
        line += f", ${raw['cost_usd']:.5f}"
    return line


def _odds(c: dict) -> str:
    probabilities = c.get("probabilities")
    if not c.get("undecided") or not isinstance(probabilities, dict):
        return ""
    supported, contradicted = probabilities.get("supported"), probabilities.get("contradicted")
    if not (_is_number(supported) and _is_number(contradicted)):
        return ""
    return f"supported {supported:.2f} · contradicted {contradicted:.2f}"


def _verification(raw, escalation=None) -> Verification | None:
    if not isinstance(raw, dict):
        return None
    claims = []
    for c in _list_of_dicts(raw.get("claims")):
        verdict = c.get("verdict")
        claims.append(
            ClaimVerdict(
                claim=_text_of(c.get("claim")),
                verdict=verdict if verdict in VERDICTS else "unknown",
                confidence=_number(c.get("confidence")),
                reason=_text_of(c.get("reason")),
                kind=_text_of(c.get("kind")),
                best=_source_span(c.get("best_source")),
                by_llm=c.get("decided_by") == "llm",
                undecided=c.get("undecided") is True,
                odds=_odds(c),
                escalation=_claim_escalation_line(c.get("escalation")),
            )
        )
    counted = {v: sum(1 for c in claims if c.verdict == v) for v in VERDICTS}

    def count(verdict: str) -> int:
        stored = raw.get(f"{verdict}_count")
        return int(stored) if _is_number(stored) and stored >= 0 else counted[verdict]

    grounded = raw.get("grounded")
    return Verification(
        claims=claims[:MAX_SHOWN_CLAIMS],
        hidden=max(0, len(claims) - MAX_SHOWN_CLAIMS),
        supported=count("supported"),
        contradicted=count("contradicted"),
        unverifiable=count("unverifiable"),
        unverifiable_ratio=_number(raw.get("unverifiable_ratio")),
        summary=_text_of(raw.get("summary")),
        method=_text_of(raw.get("method")),
        grounded=grounded if isinstance(grounded, bool) else None,
        escalation=_escalation_line(escalation),
    )


def _consistency(meta: dict) -> Consistency | None:
    if meta.get("check") != "consistency":
        return None
    pairs = [
        Contradiction(_text_of(c.get("claim_a")), _text_of(c.get("claim_b")), _text_of(c.get("reason")))
        for c in _list_of_dicts(meta.get("contradictions"))
    ]
    total = meta.get("contradictions_total")
    checked = meta.get("claims_checked")
    return Consistency(
        contradictions=pairs,
        claims_checked=int(checked) if _is_number(checked) else None,
        total=int(total) if _is_number(total) and total >= len(pairs) else len(pairs),
    )


def _citation_failures(meta: dict) -> CitationFailures | None:
    items = []
    for f in _list_of_dicts(meta.get("citation_failures")):
        ident, quote = citation_parts(f.get("citation"))
        if isinstance(f.get("source_id"), str) and f["source_id"]:
            ident = f["source_id"]
        text = f.get("source_text")
        items.append(
            CitationFailure(
                source_id=ident,
                quote=quote,
                problem=_text_of(f.get("problem")),
                source_text=text if isinstance(text, str) else None,
            )
        )
    if not items:
        return None
    total = meta.get("citation_failures_total")
    return CitationFailures(items=items, total=int(total) if _is_number(total) and total >= len(items) else len(items))


def evaluation_evidence(metadata) -> EvaluationEvidence:
    """What an evaluation's metadata says failed, in shapes the templates can show (falsy if nothing)."""
    if not isinstance(metadata, dict):
        return EvaluationEvidence()
    codes = metadata.get("reason_codes")
    return EvaluationEvidence(
        verification=_verification(metadata.get("verification"), metadata.get("escalation")),
        consistency=_consistency(metadata),
        citations=_citation_failures(metadata),
        reason_codes=[c for c in codes if isinstance(c, str)] if isinstance(codes, list) else [],
    )
