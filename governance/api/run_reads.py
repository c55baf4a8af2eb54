"""Reading one run over the API, bounded however long the run is.

`GET /runs/{id}/` answers the run, its counts and its latest decision; its reports, evaluations and
spans are cursor-paginated lists beside it. The whole run in one body (every report and
evaluation: 0.6 MB at 230 reports) is still answered behind `?expand=all` for one release,
deprecated, with a `Deprecation` header and a `Link` to the lists.
"""

from django.db.models import Count, Q
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import exceptions
from rest_framework.response import Response

from core.api.contract import PAGE_PARAMETERS, known_query, represented, represented_list
from core.api.pagination import OldestFirstPagination
from core.lookup import pk_or_404
from governance.models import Action, Decision, GroundingReport, Run, attach_sources
from tenants.models import KeyScope

from .runs import _OneRun, _visible_runs
from .serializers import EvaluationOut, ReportOut, RunDetailOut, RunSummaryOut

EXPAND_ALL = "all"

EXPAND_PARAM = OpenApiParameter(
    "expand",
    OpenApiTypes.STR,
    enum=[EXPAND_ALL],
    deprecated=True,
    description=(
        "Deprecated, for one release: `all` answers the whole run as before (every report, evaluation and "
        "span inline, unbounded). Read the paginated `reports/`, `evaluations/` and `spans/` lists instead."
    ),
)


# The summary, or with the deprecated `expand=all` the whole run: each body matches exactly one of them.
RUN_READ = PolymorphicProxySerializer(
    component_name="RunRead", serializers=[RunSummaryOut, RunDetailOut], resource_type_field_name=None
)


def _run_or_404(view, pk) -> Run:
    return get_object_or_404(_visible_runs(view.request, view.tenant), pk=pk_or_404(pk))


def run_counts(run: Run) -> dict:
    """How many reports, evaluations (enforced warns and blocks among them) and spans the run has:
    two COUNTs over the run's own rows (indexed by run)."""
    evaluations = run.evaluations.aggregate(
        total=Count("id"), violations=Count("id", filter=Q(shadow=False, action__in=(Action.WARN, Action.BLOCK)))
    )
    return {
        "reports": run.report_count,
        "evaluations": evaluations["total"],
        "violations": evaluations["violations"],
        "spans": run.spans.count(),
    }


def latest_decision(run: Run) -> dict | None:
    decision = Decision.objects.filter(run=run).order_by("-id").first()
    if decision is None:
        return None
    return {
        "id": decision.pk,
        "phase": decision.phase,
        "action": decision.action,
        "reason": decision.reason,
        "abstention_response": decision.abstention_response,
        "created_at": decision.created_at,
        "evaluations": represented_list(EvaluationOut, decision.evaluations.order_by("id")),
    }


class RunDetailView(_OneRun):
    reads_replica = True
    required_scope = KeyScope.READ
    error_statuses = {"get": (400,)}  # an expand other than "all", an unknown parameter

    @extend_schema(parameters=[EXPAND_PARAM], responses=RUN_READ)
    def get(self, request, pk: int):
        known_query(request, ("expand",))
        expand = request.query_params.get("expand")
        if expand is not None and expand != EXPAND_ALL:
            raise exceptions.ValidationError({"expand": [f'Must be "{EXPAND_ALL}" or left out.']})
        run = _run_or_404(self, pk)
        if expand == EXPAND_ALL:
            run = Run.objects.prefetch_related("spans").get(pk=run.pk)
            response = Response(represented(RunDetailOut, run))
            response["Deprecation"] = "true"
            base = request.build_absolute_uri(f"/api/v1/runs/{run.pk}/")
            response["Link"] = ", ".join(
                f'<{base}{name}/>; rel="successor-version"' for name in ("reports", "evaluations", "spans")
            )
            return response
        run.counts = run_counts(run)
        run.latest_decision = latest_decision(run)
        return Response(represented(RunSummaryOut, run))


class _RunRows(_OneRun):
    """One page of one of the run's lists, oldest first (`{next, previous, results}`)."""

    reads_replica = True
    required_scope = KeyScope.READ
    pagination_class = OldestFirstPagination

    def page_of(self, request, queryset, build):
        known_query(request, PAGE_PARAMETERS)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(build(page))


class RunReportListView(_RunRows):
    @extend_schema(responses=ReportOut(many=True))
    def get(self, request, pk: int):
        run = _run_or_404(self, pk)
        reports = GroundingReport.objects.filter(run=run)
        return self.page_of(request, reports, lambda page: represented_list(ReportOut, attach_sources(page)))


class RunEvaluationListView(_RunRows):
    @extend_schema(responses=EvaluationOut(many=True))
    def get(self, request, pk: int):
        run = _run_or_404(self, pk)
        return self.page_of(request, run.evaluations.all(), lambda page: represented_list(EvaluationOut, page))
