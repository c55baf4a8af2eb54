"""The Trace tab's grounding reports, bounded however many the run holds (docs/dashboard.md#trace).

A long-running agent's run can hold thousands of reports. The list below the waterfall shows a page
of them (REPORTS_PER_PAGE, keyset on seq); the waterfall still marks every report's place on the
axis, from aggregates: at most MAX_REPORT_MARKERS markers, each standing for a run of consecutive
reports when there are more. A fixed number of queries, none of which returns more than a page's or the markers' rows.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, ExpressionWrapper, F, IntegerField, Max, Min, Q

from core.vocabulary import SEVERITY

from ..models import GroundingReport, Run, attach_sources

REPORTS_PER_PAGE = 20
MAX_REPORT_MARKERS = 100


@dataclass
class ReportPage:
    reports: list[GroundingReport]
    count: int = 0  # the run's, over every page (from its marks)
    starts_at: int | None = None  # the ?reports= this page was reached by; None: the first page
    earlier_from: int | None = None  # the ?reports= of the page before; None: the first page
    earlier: bool = False
    next_from: int | None = None  # the ?reports= of the page after; None: this is the last

    @property
    def first_seq(self) -> int | None:
        return self.reports[0].seq if self.reports else None

    @property
    def last_seq(self) -> int | None:
        return self.reports[-1].seq if self.reports else None

    @property
    def paged(self) -> bool:
        return self.earlier or self.next_from is not None


@dataclass
class ReportMarks:
    """Consecutive reports that share one marker: one report, or a bucket of them."""

    first_seq: int
    last_seq: int
    count: int
    at: datetime  # its first report's time
    ends: datetime  # its last report's time
    actions: Counter = field(default_factory=Counter)  # the mid_execution decisions' actions

    @property
    def action(self) -> str | None:
        return max(self.actions, key=SEVERITY.__getitem__) if self.actions else None

    @property
    def label(self) -> str:
        if self.count == 1:
            return f"Grounding report {self.first_seq}"
        said = ", ".join(f"{n} {a}" for a, n in sorted(self.actions.items(), key=lambda an: -SEVERITY[an[0]]))
        return f"Grounding reports {self.first_seq}–{self.last_seq} ({self.count} reports{': ' if said else ''}{said})"


def report_page(*, run: Run, starts_at: int | None) -> ReportPage:
    """The reports from seq `starts_at` on (the first page when None), REPORTS_PER_PAGE of them with
    their sources and score audits; past the last report, the last page. Two queries, three on a
    later page."""
    rows = GroundingReport.objects.filter(run=run).select_related("score_audit").order_by("seq")
    start = starts_at or 0
    reports = list(rows.filter(seq__gte=start)[: REPORTS_PER_PAGE + 1])
    if not reports and start:  # past the end: the last page
        reports = list(reversed(rows.order_by("-seq")[:REPORTS_PER_PAGE]))
    page = ReportPage(reports=[])
    if len(reports) > REPORTS_PER_PAGE:
        page.next_from = reports[REPORTS_PER_PAGE].seq
        reports = reports[:REPORTS_PER_PAGE]
    page.reports = attach_sources(reports)
    if start and reports:
        earlier = rows.filter(seq__lt=reports[0].seq).order_by("-seq").values_list("seq", flat=True)
        before = list(earlier[: REPORTS_PER_PAGE + 1])
        if before:
            page.earlier, page.starts_at = True, reports[0].seq
            # A whole page back; when that reaches the first report, the first page (no ?reports=).
            page.earlier_from = before[REPORTS_PER_PAGE - 1] if len(before) > REPORTS_PER_PAGE else None
    return page


def report_marks(*, run: Run) -> list[ReportMarks]:
    """Every report's place on the axis, in seq order, with its mid_execution decision's action: one
    mark per report, or when the run has more than MAX_REPORT_MARKERS, one per bucket of consecutive
    reports, at its first report's time, with the decisions' actions counted. One query, aggregated
    by the database. The buckets are sized from the run's report_count, which numbers its reports
    (a report's seq is at most that); rows written around the services are merged here."""
    size = max(1, -(-run.report_count // MAX_REPORT_MARKERS))
    bucket = ExpressionWrapper((F("seq") - 1) / size, output_field=IntegerField())
    found = (
        GroundingReport.objects.filter(run=run)
        .annotate(bucket=bucket)
        .values("bucket")
        .annotate(
            first=Min("seq"),
            last=Max("seq"),
            n=Count("id", distinct=True),
            at=Min("created_at"),
            ends=Max("created_at"),
            **{action: Count("decisions", filter=Q(decisions__action=action)) for action in SEVERITY},
        )
        .order_by("bucket")
    )
    rows = list(found)
    marks: list[ReportMarks] = []
    per_mark = max(1, -(-len(rows) // MAX_REPORT_MARKERS))
    for i in range(0, len(rows), per_mark):
        group = rows[i : i + per_mark]
        actions: Counter = Counter()
        for row in group:
            actions.update({action: row[action] for action in SEVERITY if row[action]})
        marks.append(
            ReportMarks(
                first_seq=group[0]["first"],
                last_seq=group[-1]["last"],
                count=sum(row["n"] for row in group),
                at=group[0]["at"],
                ends=max(row["ends"] for row in group),
                actions=actions,
            )
        )
    return marks
