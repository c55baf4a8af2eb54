"""Reads for the dashboard pages: runs, a run's governance and trace, violations, the audit log, overview.

Every list is keyset-paginated by id (`?before=<id>` for older rows, `?after=<id>` for newer ones):
no OFFSET and no COUNT(*) over the whole set, so a page costs the same at row ten and at row ten
million. Each selector runs a fixed number of queries, whatever the number of rows.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from heapq import merge
from numbers import Real
from typing import Any

from django.db.models import Count, F, Q, QuerySet
from django.db.models.functions import Trunc
from django.utils import timezone

from .filters import AuditFilter, RunFilter, ViolationFilter
from .models import Action, AuditEvent, Decision, Evaluation, GroundingReport, Phase, Run, Span

PAGE_SIZE = 50
PHASE_ORDER = (Phase.BEFORE, Phase.MID, Phase.AFTER)
VIOLATION_ACTIONS = (Action.WARN, Action.BLOCK)
PHASE_LABELS = {
    Phase.BEFORE: "when the run started",
    Phase.MID: "on each grounding report",
    Phase.AFTER: "when the run completed",
}


# ---------------------------------------------------------------------------------------------
# Keyset pagination


@dataclass
class KeysetPage:
    rows: list
    older: int | None = None  # pass as ?before= to read the next, older page
    newer: int | None = None  # pass as ?after= to read the previous, newer page

    @property
    def has_other_pages(self) -> bool:
        return self.older is not None or self.newer is not None


def keyset_page(querysets: Sequence[QuerySet], *, before: int | None = None, after: int | None = None,
                size: int = PAGE_SIZE) -> KeysetPage:
    """Newest-first rows by id from one or more querysets over disjoint rows, merged.

    Several querysets let a caller split an `IN (...)` filter into one range scan per value (the
    violations list reads warns and blocks separately): each is then an index range scan on
    `(tenant, action, -id)` that stops after `size + 1` rows, however rare either action is.
    """
    if after is not None and before is None:
        parts = [list(qs.filter(id__gt=after).order_by("id")[: size + 1]) for qs in querysets]
        rows = list(merge(*parts, key=lambda r: r.id))[: size + 1]
        if len(rows) <= size:
            # Back at the newest rows: show the full first page rather than a short one.
            return keyset_page(querysets, size=size)
        newer = rows[size - 1].id
        rows = rows[:size][::-1]
        # We came from an older page, so rows older than these exist.
        return KeysetPage(rows=rows, older=rows[-1].id if rows else None, newer=newer)
    parts = []
    for qs in querysets:
        if before is not None:
            qs = qs.filter(id__lt=before)
        parts.append(list(qs.order_by("-id")[: size + 1]))
    rows = list(merge(*parts, key=lambda r: -r.id))[: size + 1]
    older = rows[size - 1].id if len(rows) > size else None
    rows = rows[:size]
    newer = rows[0].id if (before is not None and rows) else None
    return KeysetPage(rows=rows, older=older, newer=newer)


def _filtered(filterset_class, data, queryset):
    fs = filterset_class(data, queryset=queryset)
    return fs, fs.is_valid()


def run_list(*, tenant, data, before=None, after=None) -> tuple[RunFilter, KeysetPage]:
    fs, valid = _filtered(RunFilter, data, Run.objects.filter(tenant=tenant))
    if not valid:
        return fs, KeysetPage(rows=[])
    qs = fs.qs.only("id", "agent_name", "workflow_name", "status", "final_action", "started_at", "ended_at")
    return fs, keyset_page([qs], before=before, after=after)


def violation_list(*, tenant, data, before=None, after=None) -> tuple[ViolationFilter, KeysetPage]:
    fs, valid = _filtered(ViolationFilter, data, Evaluation.objects.filter(tenant=tenant))
    if not valid:
        return fs, KeysetPage(rows=[])
    chosen = fs.form.cleaned_data.get("action")
    actions = [chosen] if chosen else list(VIOLATION_ACTIONS)
    # The filters without ViolationFilter's own `action IN (warn, block)`: each part below names its
    # action, and the redundant IN would only skew the planner's row estimates.
    base = fs.filter_queryset(fs.queryset.all()).defer("metadata")
    return fs, keyset_page([base.filter(action=a) for a in actions], before=before, after=after)


def audit_list(*, tenant, data, before=None, after=None) -> tuple[AuditFilter, KeysetPage]:
    fs, valid = _filtered(AuditFilter, data, AuditEvent.objects.filter(tenant=tenant))
    if not valid:
        return fs, KeysetPage(rows=[])
    return fs, keyset_page([fs.qs], before=before, after=after)


# ---------------------------------------------------------------------------------------------
# A run: the Governance tab


@dataclass
class DecisionView:
    decision: Decision | None
    evaluations: list[Evaluation]

    @property
    def phase(self) -> str:
        return self.decision.phase if self.decision else self.evaluations[0].phase


@dataclass
class PhaseGroup:
    phase: str
    decisions: list[DecisionView]

    @property
    def label(self) -> str:
        return PHASE_LABELS.get(self.phase, "")

    @property
    def evaluation_count(self) -> int:
        return sum(len(d.evaluations) for d in self.decisions)


def _run_evaluations(run: Run) -> list[Evaluation]:
    return list(Evaluation.objects.filter(run=run).select_related("reviewed_by").order_by("id"))


def _decision_views(decisions: Iterable[Decision], evaluations: Iterable[Evaluation]) -> list[DecisionView]:
    by_decision: dict[int | None, list[Evaluation]] = defaultdict(list)
    for e in evaluations:
        by_decision[e.decision_id].append(e)
    views = [DecisionView(d, by_decision.pop(d.id, [])) for d in decisions]
    # Evaluations without a decision row (none are written today, but the column allows it).
    views += [DecisionView(None, [e]) for e in by_decision.pop(None, [])]
    return views


def run_governance(*, run: Run) -> list[PhaseGroup]:
    """Every decision of the run with its evaluations, grouped by phase in workflow order. Two queries."""
    decisions = list(Decision.objects.filter(run=run).annotate(report_seq=F("report__seq")).order_by("id"))
    views = _decision_views(decisions, _run_evaluations(run))
    groups = []
    for phase in PHASE_ORDER:
        in_phase = [v for v in views if v.phase == phase]
        if in_phase:
            groups.append(PhaseGroup(phase=phase, decisions=in_phase))
    return groups


# ---------------------------------------------------------------------------------------------
# Evidence inside an evaluation's metadata: the verifier's verdicts, self-contradictions, citations
#
# The engine and the judges write these shapes, but metadata is stored JSON that an older row or a
# custom category may fill with anything: each reader takes what it recognises and drops the rest,
# so a page shows less rather than failing. Nothing here queries the database.

VERDICTS = ("supported", "contradicted", "unverifiable")
CITATION_PROBLEMS = {
    "quote_not_found": "Quote not found in the source",
    "unresolved": "Not a source the run reported or retrieved",
    "missing_quote": "No quote (the policy requires one)",
}
MAX_SHOWN_CLAIMS = 200


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
    return SourceSpan(id=str(ident) if ident is not None else "", span=span or content, content=content,
                      score=_number(raw.get("score")), relevance=_number(raw.get("relevance")))


def _verification(raw) -> Verification | None:
    if not isinstance(raw, dict):
        return None
    claims = []
    for c in _list_of_dicts(raw.get("claims")):
        verdict = c.get("verdict")
        claims.append(ClaimVerdict(
            claim=_text_of(c.get("claim")), verdict=verdict if verdict in VERDICTS else "unknown",
            confidence=_number(c.get("confidence")), reason=_text_of(c.get("reason")),
            kind=_text_of(c.get("kind")), best=_source_span(c.get("best_source")),
        ))
    counted = {v: sum(1 for c in claims if c.verdict == v) for v in VERDICTS}

    def count(verdict: str) -> int:
        stored = raw.get(f"{verdict}_count")
        return int(stored) if _is_number(stored) and stored >= 0 else counted[verdict]

    grounded = raw.get("grounded")
    return Verification(
        claims=claims[:MAX_SHOWN_CLAIMS], hidden=max(0, len(claims) - MAX_SHOWN_CLAIMS),
        supported=count("supported"), contradicted=count("contradicted"), unverifiable=count("unverifiable"),
        unverifiable_ratio=_number(raw.get("unverifiable_ratio")), summary=_text_of(raw.get("summary")),
        method=_text_of(raw.get("method")), grounded=grounded if isinstance(grounded, bool) else None,
    )


def _consistency(meta: dict) -> Consistency | None:
    if meta.get("check") != "consistency":
        return None
    pairs = [Contradiction(_text_of(c.get("claim_a")), _text_of(c.get("claim_b")), _text_of(c.get("reason")))
             for c in _list_of_dicts(meta.get("contradictions"))]
    total = meta.get("contradictions_total")
    checked = meta.get("claims_checked")
    return Consistency(contradictions=pairs, claims_checked=int(checked) if _is_number(checked) else None,
                       total=int(total) if _is_number(total) and total >= len(pairs) else len(pairs))


def _citation_failures(meta: dict) -> CitationFailures | None:
    items = []
    for f in _list_of_dicts(meta.get("citation_failures")):
        ident, quote = citation_parts(f.get("citation"))
        if isinstance(f.get("source_id"), str) and f["source_id"]:
            ident = f["source_id"]
        text = f.get("source_text")
        items.append(CitationFailure(source_id=ident, quote=quote, problem=_text_of(f.get("problem")),
                                     source_text=text if isinstance(text, str) else None))
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
        verification=_verification(metadata.get("verification")),
        consistency=_consistency(metadata),
        citations=_citation_failures(metadata),
        reason_codes=[c for c in codes if isinstance(c, str)] if isinstance(codes, list) else [],
    )


# ---------------------------------------------------------------------------------------------
# A run: the Trace tab


@dataclass
class ScoreCheck:
    score: Any
    checks: list[tuple[str, float, bool]] = field(default_factory=list)  # (policy, threshold, passed)
    below_floor: bool = False

    @property
    def numeric(self) -> bool:
        return _is_number(self.score)

    @property
    def percent(self) -> float:
        return max(0.0, min(100.0, float(self.score) * 100)) if self.numeric else 0.0

    @property
    def passed(self) -> bool | None:
        if not self.checks:
            return None
        return all(ok for _, _, ok in self.checks)


@dataclass
class TraceItem:
    kind: str  # "span" | "report" | "decision"
    at: datetime
    obj: Any
    ends: datetime | None = None
    offset_pct: float = 0.0
    width_pct: float = 0.0
    offset_ms: int = 0
    decision: DecisionView | None = None
    scores: list[ScoreCheck] = field(default_factory=list)
    thresholds: dict = field(default_factory=dict)  # policy -> {"threshold", "floor", "abstention", ...}
    retrieval: "Retrieval | None" = None  # a retrieval span's provenance record (seed 004)

    @property
    def duration_ms(self) -> int | None:
        if self.ends is None:
            return None
        return int((self.ends - self.at).total_seconds() * 1000)


@dataclass
class Trace:
    items: list[TraceItem]
    starts: datetime
    ends: datetime

    @property
    def total_ms(self) -> int:
        return int((self.ends - self.starts).total_seconds() * 1000)


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _rules_by_policy(evaluations: Iterable[Evaluation]) -> dict[str, dict]:
    """The rules each policy ran with, as stored by its before_workflow evaluation."""
    rules = {}
    for e in evaluations:
        if e.phase == Phase.BEFORE and isinstance(e.metadata, dict) and isinstance(e.metadata.get("rules"), dict):
            rules[e.policy_name] = e.metadata["rules"]
    return rules


def _report_thresholds(view: DecisionView | None, rules: dict[str, dict]) -> dict[str, dict]:
    """Per policy: the score threshold and relevance floor that judged this report, and the run's limits."""
    thresholds: dict[str, dict] = {}
    for name, r in rules.items():
        thresholds[name] = {
            "threshold": r.get("min_grounding_score"), "floor": r.get("score_relevance_floor"),
            "abstention": r.get("abstention_threshold"), "min_citations": r.get("min_citations"),
            "max_unsupported": r.get("max_unsupported_claims"),
        }
    for e in view.evaluations if view else ():
        meta = e.metadata if isinstance(e.metadata, dict) else {}
        if e.source != Evaluation.Source.ENGINE:
            continue
        entry = thresholds.setdefault(e.policy_name, {})
        if _is_number(meta.get("threshold")):
            entry["threshold"] = meta["threshold"]
        if _is_number(meta.get("relevance_floor")):
            entry["floor"] = meta["relevance_floor"]
    return {k: {n: v for n, v in t.items() if _is_number(v)} for k, t in thresholds.items()}


def _score_checks(scores, thresholds: dict[str, dict]) -> list[ScoreCheck]:
    checks = []
    for score in scores if isinstance(scores, list) else []:
        check = ScoreCheck(score=score)
        if check.numeric:
            for policy, t in thresholds.items():
                floor = t.get("floor")
                if floor is not None and score < floor:
                    check.below_floor = True
                if "threshold" in t:
                    check.checks.append((policy, t["threshold"], score >= t["threshold"]))
        checks.append(check)
    return checks


# A retrieval span's provenance record (seed 004): queries, and results grouped by source, each
# marked as cited in the answer and as below the relevance floor.
#
# The floor is each applicable policy's `score_relevance_floor`, read from the rules its
# before_workflow evaluation stored. With several policies every distinct floor is kept: a result is
# marked once per floor it falls under, naming the policies that set it, and each floor is a tick
# on the relevance bars. So the strictest floor is always visible, and a lenient policy does not
# hide it. "Cited" means the result's source_id is among the run's citations (plain strings, or
# the source_id of {source_id, quote}); a citation of it that failed a check is named too.

MAX_SHOWN_RESULTS = 100


@dataclass
class RetrievedResult:
    source_id: str
    source_type: str
    relevance: float | None
    text: str
    metadata: dict
    cited: bool = False
    quoted: bool = False
    citation_problems: list[str] = field(default_factory=list)
    below: list[tuple[float, list[str]]] = field(default_factory=list)  # (floor, policies) it falls under

    @property
    def percent(self) -> float:
        return max(0.0, min(100.0, self.relevance * 100)) if self.relevance is not None else 0.0


@dataclass
class RetrievedGroup:
    name: str
    results: list[RetrievedResult]
    hidden: int = 0  # results beyond MAX_SHOWN_RESULTS

    @property
    def count(self) -> int:
        return len(self.results) + self.hidden


@dataclass
class Retrieval:
    queries: list[str]
    scope: str
    mode: str
    filters: dict
    groups: list[RetrievedGroup]
    floors: list[tuple[float, list[str]]]  # distinct floors, strictest first, with their policies
    total_results: int | None = None
    deduplicated_to: int | None = None
    retrieval_time_ms: float | None = None
    intent_resolution_time_ms: float | None = None

    def _shown(self):
        return (r for g in self.groups for r in g.results)

    @property
    def result_count(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def cited_count(self) -> int:
        return sum(1 for r in self._shown() if r.cited)

    @property
    def below_count(self) -> int:
        return sum(1 for r in self._shown() if r.below)

    @property
    def floor_ticks(self) -> list[tuple[float, str]]:
        return [(floor, ", ".join(policies)) for floor, policies in self.floors]


def _relevance_floors(rules: dict[str, dict]) -> list[tuple[float, list[str]]]:
    floors: dict[float, list[str]] = defaultdict(list)
    for policy, r in rules.items():
        floor = r.get("score_relevance_floor")
        if _is_number(floor):
            floors[floor].append(policy)
    return sorted(floors.items(), key=lambda item: -item[0])


def _cited(citations) -> tuple[set[str], set[str]]:
    """(ids cited at all, ids cited with a quote) among the run's citations."""
    ids, quoted = set(), set()
    for c in citations if isinstance(citations, list) else ():
        ident, quote = citation_parts(c)
        if ident:
            ids.add(ident)
            if quote:
                quoted.add(ident)
    return ids, quoted


def _citation_problems(evaluations: Iterable[Evaluation]) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = defaultdict(list)
    for e in evaluations:
        failures = _citation_failures(e.metadata) if isinstance(e.metadata, dict) else None
        for f in failures.items if failures else ():
            if f.label not in problems[f.source_id]:
                problems[f.source_id].append(f.label)
    return problems


def _result(raw: dict, *, cited, quoted, problems, floors) -> RetrievedResult | None:
    ident = raw.get("source_id")
    if not isinstance(ident, str):
        return None
    relevance = _number(raw.get("relevance"))
    text = raw.get("text") if isinstance(raw.get("text"), str) else _text_of(raw.get("text_preview"))
    metadata = raw.get("metadata")
    return RetrievedResult(
        source_id=ident, source_type=_text_of(raw.get("source_type")), relevance=relevance, text=text,
        metadata=metadata if isinstance(metadata, dict) else {},
        cited=ident in cited, quoted=ident in quoted, citation_problems=problems.get(ident, []),
        below=[(floor, names) for floor, names in floors if relevance is not None and relevance < floor],
    )


def retrieval_view(provenance, *, citations=(), rules: dict[str, dict] | None = None,
                   problems: dict[str, list[str]] | None = None) -> Retrieval | None:
    """A provenance record as the Trace tab shows it; None when it is not a record at all."""
    if not isinstance(provenance, dict):
        return None
    intent = provenance.get("intent") if isinstance(provenance.get("intent"), dict) else {}
    by_source = provenance.get("results_by_source")
    grouped: list[tuple[str, list[dict]]] = []
    if isinstance(by_source, dict):
        grouped = [(str(name), _list_of_dicts(results)) for name, results in by_source.items()]
    if not any(results for _, results in grouped):
        # Only the flat merged list: group it by each result's own source_name.
        flat: dict[str, list[dict]] = defaultdict(list)
        for r in _list_of_dicts(provenance.get("results")):
            flat[_text_of(r.get("source_name")) or "results"].append(r)
        grouped = grouped if not flat else list(flat.items())
    cited, quoted = _cited(list(citations) if citations else [])
    floors = _relevance_floors(rules or {})
    groups = []
    for name, raws in grouped:
        results = [r for r in (_result(raw, cited=cited, quoted=quoted, problems=problems or {}, floors=floors)
                               for raw in raws[:MAX_SHOWN_RESULTS]) if r]
        groups.append(RetrievedGroup(name=name, results=results, hidden=max(0, len(raws) - MAX_SHOWN_RESULTS)))
    queries = intent.get("text_queries")
    filters = intent.get("filters")

    def count(key):
        value = provenance.get(key)
        return int(value) if _is_number(value) else None

    return Retrieval(
        queries=[q for q in queries if isinstance(q, str)] if isinstance(queries, list) else [],
        scope=_text_of(intent.get("scope")), mode=_text_of(intent.get("mode")),
        filters=filters if isinstance(filters, dict) else {}, groups=groups, floors=floors,
        total_results=count("total_results"), deduplicated_to=count("deduplicated_to"),
        retrieval_time_ms=_number(provenance.get("retrieval_time_ms")),
        intent_resolution_time_ms=_number(provenance.get("intent_resolution_time_ms")),
    )


def run_trace(*, run: Run) -> Trace:
    """Spans, grounding reports and phase decisions of a run on one time axis. Four queries."""
    spans = list(Span.objects.filter(run=run).order_by("id"))
    reports = list(GroundingReport.objects.filter(run=run).order_by("seq"))
    decisions = list(Decision.objects.filter(run=run).order_by("id"))
    evaluations = _run_evaluations(run)
    views = _decision_views(decisions, evaluations)
    by_report = {v.decision.report_id: v for v in views if v.decision and v.decision.report_id}
    rules = _rules_by_policy(evaluations)
    problems: dict[str, list[str]] | None = None

    items: list[TraceItem] = []
    for s in spans:
        start = s.started_at or s.created_at
        ends = s.ended_at if (s.ended_at and s.ended_at >= start) else None
        retrieval = None
        if s.kind == Span.Kind.RETRIEVAL and isinstance(s.attributes, dict) and "provenance" in s.attributes:
            if problems is None:
                problems = _citation_problems(evaluations)
            retrieval = retrieval_view(s.attributes["provenance"], citations=run.citations, rules=rules,
                                       problems=problems)
        items.append(TraceItem(kind="span", at=start, ends=ends, obj=s, retrieval=retrieval))
    for r in reports:
        view = by_report.get(r.id)
        thresholds = _report_thresholds(view, rules)
        items.append(TraceItem(kind="report", at=r.created_at, obj=r, decision=view, thresholds=thresholds,
                               scores=_score_checks(r.grounding_scores, thresholds)))
    for v in views:
        if v.decision and v.decision.report_id is None:
            items.append(TraceItem(kind="decision", at=v.decision.created_at, obj=v.decision, decision=v))
    order = {"decision": 0, "span": 1, "report": 2}
    items.sort(key=lambda i: (i.at, order[i.kind], i.obj.id))

    starts = min([run.started_at, *(i.at for i in items)])
    ends = max([run.ended_at or run.started_at, *(i.ends or i.at for i in items)])
    total = max((ends - starts).total_seconds(), 0.001)
    for i in items:
        i.offset_ms = int((i.at - starts).total_seconds() * 1000)
        i.offset_pct = round(min(100.0, (i.at - starts).total_seconds() / total * 100), 2)
        if i.ends is not None:
            i.width_pct = round(max(0.6, min(100.0 - i.offset_pct, (i.ends - i.at).total_seconds() / total * 100)), 2)
    return Trace(items=items, starts=starts, ends=ends)


# ---------------------------------------------------------------------------------------------
# A violation and its evidence

OTHER_EVALUATIONS_LIMIT = 200


@dataclass
class Evidence:
    report: GroundingReport | None
    accumulated: bool  # after_workflow: the run's collected citations, claims and confidence
    other_evaluations: list[Evaluation]
    other_truncated: bool
    rules: dict


def violation_evidence(*, evaluation: Evaluation) -> Evidence:
    """What the evaluation judged: the report of its decision (mid_execution) or the whole run's data."""
    decision = (Decision.objects.filter(pk=evaluation.decision_id).select_related("report").first()
                if evaluation.decision_id else None)
    others = list(
        Evaluation.objects.filter(run_id=evaluation.run_id).exclude(pk=evaluation.pk).defer("metadata")
        .order_by("id")[: OTHER_EVALUATIONS_LIMIT + 1]
    )
    rules = {}
    if evaluation.phase != Phase.BEFORE:
        before = (Evaluation.objects.filter(run_id=evaluation.run_id, phase=Phase.BEFORE,
                                            policy_name=evaluation.policy_name).only("metadata").first())
        if before and isinstance(before.metadata, dict) and isinstance(before.metadata.get("rules"), dict):
            rules = before.metadata["rules"]
    return Evidence(
        report=decision.report if decision else None,
        accumulated=evaluation.phase == Phase.AFTER,
        other_evaluations=others[:OTHER_EVALUATIONS_LIMIT],
        other_truncated=len(others) > OTHER_EVALUATIONS_LIMIT,
        rules=rules,
    )


# ---------------------------------------------------------------------------------------------
# Overview

PERIODS = {
    "24h": (timedelta(hours=24), "hour", "Last 24 hours"),
    "7d": (timedelta(days=7), "day", "Last 7 days"),
    "30d": (timedelta(days=30), "day", "Last 30 days"),
}
DEFAULT_PERIOD = "24h"
TOP_N = 5


@dataclass
class Bucket:
    starts: datetime
    runs: int = 0
    warns: int = 0
    blocks: int = 0


@dataclass
class OverviewStats:
    period: str
    label: str
    since: datetime
    unit: str
    buckets: list[Bucket]
    top_policies: list[dict]
    top_agents: list[dict]

    @property
    def runs(self) -> int:
        return sum(b.runs for b in self.buckets)

    @property
    def warns(self) -> int:
        return sum(b.warns for b in self.buckets)

    @property
    def blocks(self) -> int:
        return sum(b.blocks for b in self.buckets)

    @property
    def violations(self) -> int:
        return self.warns + self.blocks

    def chart_data(self) -> dict:
        fmt = "%H:%M" if self.unit == "hour" else "%b %d"
        return {
            "labels": [b.starts.strftime(fmt) for b in self.buckets],
            "runs": [b.runs for b in self.buckets],
            "warns": [b.warns for b in self.buckets],
            "blocks": [b.blocks for b in self.buckets],
        }


def _floor(moment: datetime, unit: str) -> datetime:
    moment = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if unit == "day" else moment


def _as_utc(value) -> datetime:
    if isinstance(value, str):  # some backends hand back text for truncated datetimes
        value = datetime.fromisoformat(value)
    if timezone.is_naive(value):
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def overview_stats(*, tenant, period: str, now: datetime | None = None) -> OverviewStats:
    """Runs, warns and blocks per hour or day, and the most violated policies and agents. Four queries.

    Warns and blocks count evaluations, as the violations list does, so each number links to a
    list showing exactly that many rows.
    """
    if period not in PERIODS:
        period = DEFAULT_PERIOD
    span, unit, label = PERIODS[period]
    now = now or timezone.now()
    # Whole minutes, so the `since` in the links to the violations list reproduces the same set.
    since = (now - span).astimezone(UTC).replace(second=0, microsecond=0)

    buckets: dict[datetime, Bucket] = {}
    cursor = _floor(since, unit)
    step = timedelta(hours=1) if unit == "hour" else timedelta(days=1)
    while cursor <= now:
        buckets[cursor] = Bucket(starts=cursor)
        cursor += step

    runs = (Run.objects.filter(tenant=tenant, started_at__gte=since, started_at__lte=now)
            .annotate(bucket=Trunc("started_at", unit, tzinfo=UTC)).values("bucket")
            .annotate(n=Count("id")).order_by())
    for row in runs:
        bucket = buckets.get(_as_utc(row["bucket"]))
        if bucket:
            bucket.runs += row["n"]

    violations = Evaluation.objects.filter(tenant=tenant, created_at__gte=since, created_at__lte=now,
                                           action__in=VIOLATION_ACTIONS)
    per_bucket = (violations.annotate(bucket=Trunc("created_at", unit, tzinfo=UTC)).values("bucket", "action")
                  .annotate(n=Count("id")).order_by())
    for row in per_bucket:
        bucket = buckets.get(_as_utc(row["bucket"]))
        if bucket:
            if row["action"] == Action.BLOCK:
                bucket.blocks += row["n"]
            else:
                bucket.warns += row["n"]

    def top(column: str) -> list[dict]:
        rows = (violations.values(column)
                .annotate(total=Count("id"), blocks=Count("id", filter=Q(action=Action.BLOCK)),
                          warns=Count("id", filter=Q(action=Action.WARN)))
                .order_by("-total", column)[:TOP_N])
        return [{"name": r[column], "total": r["total"], "blocks": r["blocks"], "warns": r["warns"]} for r in rows]

    return OverviewStats(period=period, label=label, since=since, unit=unit, buckets=list(buckets.values()),
                         top_policies=top("policy_name"), top_agents=top("agent_name"))
