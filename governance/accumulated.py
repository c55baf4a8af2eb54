"""What a run has reported so far, read from its reports.

The grounding contract accumulates (docs: after_workflow audits every citation and unsupported
claim of the run and the latest output_confidence; mid_execution checks one report's citations
against every source reported so far). None of it is kept on the run row as a growing document:
the reports are the record, read when the run completes, and sources are stored once per run
(RunSource) and looked up by the ids a check needs.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Func, IntegerField, OuterRef, Subquery, Sum

from .models import GroundingReport, Run, RunSource, joined_sources

# Above this many distinct cited ids, reading all of the run's sources is cheaper than a long
# IN list (and stays under SQLite's bound-parameter limit).
MAX_IDS_PER_LOOKUP = 500


@dataclass(frozen=True)
class Accumulated:
    citations: list
    unsupported_claims: list
    output_confidence: float | None  # the latest one reported; a report without one keeps it


def accumulate(reports: Iterable[tuple[list, list, float | None]]) -> Accumulated:
    """(citations, unsupported_claims, output_confidence) of each report, oldest first, combined."""
    citations: list = []
    claims: list = []
    confidence = None
    for report_citations, report_claims, report_confidence in reports:
        citations += report_citations or ()
        claims += report_claims or ()
        if report_confidence is not None:
            confidence = report_confidence
    return Accumulated(citations=citations, unsupported_claims=claims, output_confidence=confidence)


def run_accumulated(*, run: Run) -> Accumulated:
    """What the run's reports add up to: one query, the reports' small columns only."""
    rows = (
        GroundingReport.objects.filter(tenant_id=run.tenant_id, run_id=run.pk)
        .order_by("seq")
        .values_list("citations", "unsupported_claims", "output_confidence")
    )
    return accumulate(rows)


def run_citations(*, run: Run) -> list:
    """Every citation of the run's reports, oldest first: `run_accumulated(run=run).citations`,
    reading that one column."""
    rows = GroundingReport.objects.filter(tenant_id=run.tenant_id, run_id=run.pk).order_by("seq")
    return accumulate((citations, (), None) for citations in rows.values_list("citations", flat=True)).citations


@dataclass(frozen=True)
class Totals:
    """What a run's page summary shows of `Accumulated`: how many, not which."""

    citations: int
    unsupported_claims: int
    output_confidence: float | None


class _ArrayLength(Func):
    """A JSON column's number of elements; 0 when it holds something else than an array."""

    function = "json_array_length"  # SQLite: 0 for anything but an array
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        template = "CASE WHEN jsonb_typeof(%(expressions)s) = 'array' THEN jsonb_array_length(%(expressions)s) END"
        return self.as_sql(compiler, connection, template=template, **extra)


def run_totals(*, run: Run) -> Totals:
    """`run_accumulated`'s counts and latest output_confidence, added up by the database in one query
    of one row, so a page that shows them costs the same for a run of 10 reports or 10,000."""
    reports = GroundingReport.objects.filter(tenant_id=run.tenant_id, run_id=OuterRef("pk"))

    def total(column: str) -> Subquery:
        return Subquery(reports.values("run_id").annotate(n=Sum(_ArrayLength(column))).values("n"))

    latest = reports.filter(output_confidence__isnull=False).order_by("-seq").values("output_confidence")[:1]
    citations, claims, confidence = (
        Run.objects.filter(pk=run.pk)
        .values_list(total("citations"), total("unsupported_claims"), Subquery(latest))
        .get()
    )
    return Totals(citations=citations or 0, unsupported_claims=claims or 0, output_confidence=confidence)


def cited_ids(citations: Iterable) -> set[str]:
    """The source ids citations name: a plain string is an id, an object names its source_id."""
    ids = set()
    for citation in citations:
        ident = citation.get("source_id") if isinstance(citation, dict) else citation
        if isinstance(ident, str) and ident:
            ids.add(ident)
    return ids


def run_sources(*, run: Run, ids: set[str] | None = None) -> list[dict]:
    """The run's distinct reported sources, in the order first reported, as {"id", "text"}:
    all of them, or only those with the given ids."""
    if ids is not None and not ids:
        return []
    rows = RunSource.objects.filter(tenant_id=run.tenant_id, run_id=run.pk)
    if ids is not None and len(ids) <= MAX_IDS_PER_LOOKUP:
        rows = rows.filter(source_id__in=ids)
    found = [{"id": ident, "text": text} for ident, text in rows.order_by("id").values_list("source_id", "text")]
    return found if ids is None else [s for s in found if s["id"] in ids]


def run_reported(*, run: Run) -> tuple[Accumulated, list[dict]]:
    """What the run's reports add up to (``run_accumulated``), and every report's sources in
    report order, as reported (a source given twice is here twice): what the run's judges read at
    after_workflow. Two queries: the reports, once, and their sources' texts."""
    rows = list(
        GroundingReport.objects.filter(tenant_id=run.tenant_id, run_id=run.pk)
        .order_by("seq")
        .values_list("citations", "unsupported_claims", "output_confidence", "source_refs")
    )
    joined = joined_sources([(run.pk, refs) for *_, refs in rows])
    return accumulate(row[:3] for row in rows), [source for sources in joined for source in sources]
