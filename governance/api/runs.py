"""Runs over the API: start, report grounding, record spans, complete; list and read.

The three actions answer `run_id`. Starting a run also answers `id`, the name it used before,
for one more release (deprecated in the schema; docs/api.md).
"""

import time

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from core import metrics
from core.api.base import TenantAPIView
from core.api.contract import PAGE_PARAMETERS, filtered, known_query, represented, represented_list, validated
from core.api.pagination import IdCursorPagination, OldestFirstPagination
from core.lookup import pk_or_404
from governance import hooks, services
from governance.filters import RunFilter
from governance.models import Run
from policies.selectors import grounding_context_for
from tenants.models import KeyScope

from . import run_sort
from .serializers import (
    CompleteIn,
    GroundingIn,
    RunDecisionOut,
    RunOut,
    RunStartIn,
    RunStartOut,
    SpanIn,
    SpanOut,
)


def _decision_body(run, decision) -> dict:
    return represented(RunDecisionOut, {"run_id": run.pk, "status": run.status, "decision": decision.to_dict()})


def _owner_key_id(request) -> int | None:
    """The key whose runs alone this request may reach: an agent key's own (tenants.auth.HasScope)."""
    return request.auth.pk if request.auth.scope == KeyScope.AGENT else None


def _visible_runs(request, tenant):
    """The tenant's runs; for an agent key only the runs it started."""
    runs = Run.objects.filter(tenant=tenant)
    owner = _owner_key_id(request)
    return runs if owner is None else runs.filter(api_key_id=owner)


class _OneRun(TenantAPIView):
    """A view of one run: an agent key reaches only the runs it started (404 for the others)."""

    agent_reads_own = True

    def key_owns(self, key, pk, **kwargs) -> bool:
        # Called by the permission check, before the view opens its tenant scope: filtered by hand.
        return Run.objects.with_scopes_disabled().filter(tenant=key.tenant_id, pk=pk_or_404(pk), api_key=key).exists()


class RunListView(TenantAPIView):
    reads_replica = True  # the GET (core.routing); POST always runs on the primary
    required_scope = {"GET": KeyScope.READ, "POST": KeyScope.AGENT}
    agent_reads_own = True
    agent_name_field = "agent_name"
    filterset_class = RunFilter
    pagination_class = IdCursorPagination
    queryset = Run.objects.none()  # for the schema: the model the filters describe

    @extend_schema(request=RunStartIn, responses={201: RunStartOut})
    def post(self, request):
        data = validated(RunStartIn, request.data)
        run, decision = services.run_start(tenant=self.tenant, api_key=request.auth, **data)
        hooks.decision_returned(tenant=self.tenant, run=run, decision=decision)
        # The context rules ride along (docs/grounding-context.md), so the agent
        # can decide what reaches the model without a second call.
        body = {
            **decision.to_dict(),
            "grounding_context": grounding_context_for(tenant=self.tenant, agent_name=run.agent_name),
        }
        answer = {"run_id": run.pk, "id": run.pk, "status": run.status, "decision": body}
        return Response(represented(RunStartOut, answer), status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[run_sort.SORT_PARAMETER], responses=RunOut(many=True))
    def get(self, request):
        rows = filtered(RunFilter, request, _visible_runs(request, self.tenant), also=(*PAGE_PARAMETERS, "sort"))
        chosen = run_sort.requested_sort(request)
        if chosen is not None:
            return run_sort.sorted_runs(request, rows, *chosen, represent=lambda page: represented_list(RunOut, page))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(represented_list(RunOut, page))


class RunGroundingView(TenantAPIView):
    """Not a `_OneRun`: on this hot path the run's own read checks that an agent key started it
    (a 404 otherwise), which saves the permission check's separate query."""

    required_scope = KeyScope.AGENT
    error_statuses = {"post": (409,)}

    @extend_schema(request=GroundingIn, responses={200: RunDecisionOut})
    def post(self, request, pk: int):
        started = time.perf_counter()
        data = validated(GroundingIn, request.data)
        run, decision = services.run_record_grounding(
            tenant=self.tenant, run_id=pk, owner_key_id=_owner_key_id(request), **data
        )
        metrics.observe_report_latency(time.perf_counter() - started, tenant=self.tenant)
        hooks.decision_returned(tenant=self.tenant, run=run, decision=decision)
        return Response(_decision_body(run, decision))


class RunSpanView(_OneRun):
    """POST records a span (an agent key); GET lists the run's spans, oldest first, paginated."""

    required_scope = {"GET": KeyScope.READ, "POST": KeyScope.AGENT}
    reads_replica = True  # the GET (core.routing); POST always runs on the primary
    pagination_class = OldestFirstPagination

    @extend_schema(responses=SpanOut(many=True))
    def get(self, request, pk: int):
        known_query(request, PAGE_PARAMETERS)
        run = get_object_or_404(_visible_runs(request, self.tenant), pk=pk_or_404(pk))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(run.spans.all(), request, view=self)
        return paginator.get_paginated_response(represented_list(SpanOut, page))

    @extend_schema(request=SpanIn, responses={201: SpanOut})
    def post(self, request, pk: int):
        data = validated(SpanIn, request.data)
        span = services.run_record_span(tenant=self.tenant, run_id=pk, **data)
        return Response(represented(SpanOut, span), status=status.HTTP_201_CREATED)


class RunCompleteView(_OneRun):
    required_scope = KeyScope.AGENT
    error_statuses = {"post": (409,)}

    @extend_schema(request=CompleteIn, responses={200: RunDecisionOut})
    def post(self, request, pk: int):
        data = validated(CompleteIn, request.data)
        run, decision = services.run_complete(tenant=self.tenant, run_id=pk, **data)
        hooks.decision_returned(tenant=self.tenant, run=run, decision=decision)
        return Response(_decision_body(run, decision))
