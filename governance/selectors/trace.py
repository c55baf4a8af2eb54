"""A run: the Trace tab, spans, grounding reports and phase decisions on one time axis."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Min, Q
from django.db.models.functions import Coalesce

from ..accumulated import run_citations
from ..models import Decision, Evaluation, Phase, Run, ScoreAudit, Span
from .evidence import _is_number
from .governance_tab import DecisionView, _decision_views
from .retrieval import Retrieval, _citation_problems, retrieval_view
from .trace_reports import ReportMarks, ReportPage, report_marks, report_page
from .waterfall import Axis, Marker, Row, Tick, nested

SPANS_PER_PAGE = 200  # rows drawn at once; the rest are a "next spans" link away


@dataclass
class ScoreCheck:
    score: Any
    checks: list[tuple[str, float, bool]] = field(default_factory=list)  # (policy, threshold, passed)
    below_floor: bool = False
    # The score audit's measure against the source in the same position, when the report was audited.
    measured: float | None = None

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
    end_pct: float = 0.0
    decision: DecisionView | None = None
    scores: list[ScoreCheck] = field(default_factory=list)
    thresholds: dict = field(default_factory=dict)  # policy -> {"threshold", "floor", "abstention", ...}
    retrieval: "Retrieval | None" = None  # a retrieval span's provenance record (docs/retrieval-provenance.md)

    @property
    def duration_ms(self) -> int | None:
        if self.ends is None:
            return None
        return int((self.ends - self.at).total_seconds() * 1000)


@dataclass
class Trace:
    items: list[TraceItem]
    axis: Axis
    rows: list[Row] = field(default_factory=list)  # the page's spans, nested
    markers: list[Marker] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    span_count: int = 0  # the run's, over every page
    page: int = 0
    more: bool = False
    reports: ReportPage | None = None  # the page of reports the list below shows; counts the run's
    # The run's own duration (the summary's), which the axis covers unless events lie outside it.
    run_ms: int | None = None

    @property
    def starts(self) -> datetime:
        return self.axis.starts

    @property
    def ends(self) -> datetime:
        return self.axis.ends

    @property
    def total_ms(self) -> int:
        return self.axis.total_ms

    @property
    def report_count(self) -> int:
        return self.reports.count if self.reports else 0

    @property
    def phase_markers(self) -> int:
        return sum(1 for m in self.markers if m.kind == "phase")

    @property
    def first_span(self) -> int:
        return self.page * SPANS_PER_PAGE + 1

    @property
    def last_span(self) -> int:
        return self.page * SPANS_PER_PAGE + len(self.rows)

    @property
    def axis_beyond_run(self) -> bool:
        """Events recorded outside the run's start and end (a sender's clock differs) widen the axis."""
        return self.run_ms is not None and abs(self.total_ms - self.run_ms) > 1


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
            "threshold": r.get("min_grounding_score"),
            "floor": r.get("score_relevance_floor"),
            "abstention": r.get("abstention_threshold"),
            "min_citations": r.get("min_citations"),
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


def _score_checks(scores, thresholds: dict[str, dict], measured: list[float | None] = ()) -> list[ScoreCheck]:
    checks = []
    for i, score in enumerate(scores if isinstance(scores, list) else []):
        check = ScoreCheck(score=score, measured=measured[i] if i < len(measured) else None)
        if check.numeric:
            for policy, t in thresholds.items():
                floor = t.get("floor")
                if floor is not None and score < floor:
                    check.below_floor = True
                if "threshold" in t:
                    check.checks.append((policy, t["threshold"], score >= t["threshold"]))
        checks.append(check)
    return checks


def _measured(audit: ScoreAudit | None) -> list[float | None]:
    if audit is None or audit.status != ScoreAudit.Status.AUDITED:
        return []
    return [entry.get("measured") for entry in audit.per_source]


def run_trace(*, run: Run, page: int = 0, reports_from: int | None = None) -> Trace:
    """Spans, grounding reports, score audits and phase decisions of a run on one time axis, in a fixed
    number of queries whatever the run holds (docs/dashboard.md#trace): spans come a page
    (SPANS_PER_PAGE) at a time in order of start, reports a page (REPORTS_PER_PAGE) at a time from
    seq `reports_from`, each with its decision and evaluations; every report still has its place on
    the axis (trace_reports.report_marks). The axis is the whole run's on every page.

    A page with a retrieval span reads the run's citations too, for its results' "cited" marks: one
    more query, of one small column of every report (what a run's citations name is in no index)."""
    spans, span_count, span_bounds, page = _span_page(run, page)
    reports = report_page(run=run, starts_at=reports_from)
    on_page = [r.id for r in reports.reports]
    # The phase decisions (before_workflow, after_workflow) and this page's reports' mid_execution ones.
    decisions = list(
        Decision.objects.filter(run=run).filter(Q(report__isnull=True) | Q(report_id__in=on_page)).order_by("id")
    )
    evaluations = list(
        Evaluation.objects.filter(run=run, decision_id__in=[d.id for d in decisions])
        .select_related("reviewed_by")
        .order_by("id")
    )
    views = _decision_views(decisions, evaluations)
    by_report = {v.decision.report_id: v for v in views if v.decision and v.decision.report_id}
    # Scores and citations are checked against enforced policies only: a shadow policy's threshold
    # marked pass/fail on the timeline would read as part of the decision (the Governance tab lists
    # shadow verdicts apart).
    evaluations = [e for e in evaluations if not e.shadow]
    rules = _rules_by_policy(evaluations)
    problems: dict[str, list[str]] | None = None
    citations: list | None = None

    items: list[TraceItem] = []
    for s in spans:
        start = s.started_at or s.created_at
        ends = s.ended_at if (s.ended_at and s.ended_at >= start) else None
        retrieval = None
        if s.kind == Span.Kind.RETRIEVAL and isinstance(s.attributes, dict) and "provenance" in s.attributes:
            if problems is None:
                # after_workflow's audit of every citation, and this page's reports' checks.
                problems = _citation_problems(evaluations)
            if citations is None:
                citations = run_citations(run=run)
            retrieval = retrieval_view(s.attributes["provenance"], citations=citations, rules=rules, problems=problems)
        items.append(TraceItem(kind="span", at=start, ends=ends, obj=s, retrieval=retrieval))
    for r in reports.reports:
        view = by_report.get(r.id)
        thresholds = _report_thresholds(view, rules)
        items.append(
            TraceItem(
                kind="report",
                at=r.created_at,
                obj=r,
                decision=view,
                thresholds=thresholds,
                scores=_score_checks(r.grounding_scores, thresholds, _measured(getattr(r, "score_audit", None))),
            )
        )
    for v in views:
        if v.decision and v.decision.report_id is None:
            items.append(TraceItem(kind="decision", at=v.decision.created_at, obj=v.decision, decision=v))
    items.sort(key=_in_time_order)

    marks = report_marks(run=run)
    reports.count = sum(m.count for m in marks)
    report_bounds = {"first": min(m.at for m in marks), "last": max(m.ends for m in marks)} if marks else {}
    axis = _axis(run, items, span_bounds, report_bounds)
    for i in items:
        i.offset_ms = axis.offset_ms(i.at)
        i.offset_pct = axis.pct(i.at)
        if i.ends is not None:
            i.end_pct = axis.pct(i.ends)
            i.width_pct = round(i.end_pct - i.offset_pct, 3)
    shown = {r.seq for r in reports.reports}
    markers = [_report_marker(m, shown) for m in marks]
    markers += [_phase_marker(i) for i in items if i.kind == "decision"]
    markers.sort(key=_marker_order)
    for m in markers:
        m.pct, m.offset_ms = axis.pct(m.at), axis.offset_ms(m.at)
    return Trace(
        items=items,
        axis=axis,
        rows=nested([i for i in items if i.kind == "span"]),
        markers=markers,
        ticks=axis.ticks(),
        span_count=span_count,
        page=page,
        more=page * SPANS_PER_PAGE + len(spans) < span_count,
        reports=reports,
        run_ms=run.duration_ms if run.ended_at else None,
    )


# At one instant: before_workflow first, then spans, reports, and after_workflow last (it judges them).
_PHASE_ORDER = {Phase.BEFORE: 0, Phase.MID: 2, Phase.AFTER: 3}


def _span_page(run: Run, page: int) -> tuple[list[Span], int, dict, int]:
    """The page's spans in order of start, how many the run has, the first start and last end over all
    of them (the axis), and the page number, kept within the pages there are. A run whose spans fit
    on the first page is read in one query; a bigger one adds an aggregate."""
    rows = Span.objects.filter(run=run).annotate(starts=Coalesce("started_at", "created_at")).order_by("starts", "id")
    spans = list(rows[page * SPANS_PER_PAGE : (page + 1) * SPANS_PER_PAGE + 1])
    if page == 0 and len(spans) <= SPANS_PER_PAGE:
        return spans, len(spans), {}, 0  # every span is here: the items reach them all
    every = Span.objects.filter(run=run).aggregate(
        count=Count("id"),
        first=Min(Coalesce("started_at", "created_at")),
        last=Max(Coalesce("ended_at", "started_at", "created_at")),
    )
    last_page = max(0, every["count"] - 1) // SPANS_PER_PAGE
    if page > last_page:  # past the end: the last page
        page = last_page
        spans = list(rows[page * SPANS_PER_PAGE : (page + 1) * SPANS_PER_PAGE])
    return spans[:SPANS_PER_PAGE], every["count"], every, page


def _in_time_order(i: TraceItem) -> tuple:
    rank = {"span": 1, "report": 2}.get(i.kind)
    if rank is None:
        rank = _PHASE_ORDER.get(i.obj.phase, 2)
    return (i.at, rank, i.obj.id)


def _axis(run: Run, items: list[TraceItem], *bounds: dict) -> Axis:
    """From the run's start to its end (the duration the summary shows), or to its last event while it
    runs; widened only to reach an event recorded outside those (a sender's clock). `bounds`: the
    first and last times of what is not all on this page (spans, reports)."""
    firsts = [run.started_at, *(i.at for i in items), *(b["first"] for b in bounds if b.get("first"))]
    lasts = [run.ended_at or run.started_at, *(i.ends or i.at for i in items)]
    lasts += [b["last"] for b in bounds if b.get("last")]
    return Axis(starts=min(firsts), ends=max(lasts))


def _report_marker(mark: ReportMarks, shown: set[int]) -> Marker:
    """A report (or a bucket of them) links to its entry below: on this page, or the page it starts."""
    return Marker(
        kind="report",
        label=mark.label,
        at=mark.at,
        action=mark.action,
        anchor=f"report-{mark.first_seq}",
        count=mark.count,
        reports_from=None if mark.first_seq in shown else mark.first_seq,
    )


def _phase_marker(i: TraceItem) -> Marker:
    return Marker(kind="phase", label=i.obj.phase, at=i.at, action=i.obj.action, anchor=f"decision-{i.obj.pk}")


def _marker_order(m: Marker) -> tuple:
    """In time order; at one instant before_workflow first, then reports, after_workflow last."""
    return (m.at, 2 if m.kind == "report" else _PHASE_ORDER.get(m.label, 2))
