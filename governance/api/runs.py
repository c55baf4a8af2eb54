import time
from functools import lru_cache

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error

from core import metrics
from core.api.base import TenantAPIView
from core.api.pagination import IdCursorPagination
from governance import hooks, services
from governance.access import run_for
from governance.filters import RunFilter
from governance.models import Evaluation, Run
from policies.selectors import grounding_context_for

from .serializers import (
    CompleteIn,
    GroundingIn,
    RunDetailOut,
    RunOut,
    RunStartIn,
    SpanIn,
    SpanOut,
)


@lru_cache(maxsize=None)
def _prototype(serializer_class):
    return serializer_class()


def _validated(serializer_class, request):
    """`serializer_class(data=...).is_valid(raise_exception=True)` without rebuilding the fields.

    A DRF serializer deep-copies its declared fields on every instantiation: a quarter of a
    millisecond per grounding call. One unbound instance per class validates every request
    instead; these serializers keep no per-call state, and a bad input raises the same 400.
    """
    try:
        return _prototype(serializer_class).run_validation(request.data)
    except exceptions.ValidationError as exc:
        raise exceptions.ValidationError(as_serializer_error(exc)) from None


def _decision_body(run, decision) -> dict:
    return {"run_id": run.pk, "status": run.status, "decision": decision.to_dict()}


class RunListView(TenantAPIView):
    @extend_schema(request=RunStartIn, responses={201: dict})
    def post(self, request):
        data = _validated(RunStartIn, request)
        run, decision = services.run_start(tenant=self.tenant, api_key=request.auth, **data)
        hooks.decision_returned(tenant=self.tenant, run=run, decision=decision)
        # The context rules ride along (seed 000), so the agent can decide what reaches the model
        # without a second call.
        body = {**decision.to_dict(),
                "grounding_context": grounding_context_for(tenant=self.tenant, agent_name=run.agent_name)}
        return Response({"id": run.pk, "status": run.status, "decision": body}, status=status.HTTP_201_CREATED)

    @extend_schema(responses=RunOut(many=True))
    def get(self, request):
        qs = RunFilter(request.query_params, queryset=Run.objects.filter(tenant=self.tenant), request=request)
        if not qs.is_valid():
            return Response(qs.errors, status=status.HTTP_400_BAD_REQUEST)
        paginator = IdCursorPagination()
        page = paginator.paginate_queryset(qs.qs, request, view=self)
        return paginator.get_paginated_response(RunOut(page, many=True).data)


class RunDetailView(TenantAPIView):
    @extend_schema(responses=RunDetailOut)
    def get(self, request, pk: int):
        run_for(self.tenant, pk)
        run = (
            Run.objects.filter(tenant=self.tenant, pk=pk)
            .prefetch_related("spans", "reports", Prefetch("evaluations", queryset=Evaluation.objects.order_by("id")))
            .get()
        )
        return Response(RunDetailOut(run).data)


class RunGroundingView(TenantAPIView):
    @extend_schema(request=GroundingIn, responses={200: dict})
    def post(self, request, pk: int):
        started = time.perf_counter()
        data = _validated(GroundingIn, request)
        run, decision = services.run_record_grounding(tenant=self.tenant, run_id=pk, **data)
        metrics.observe_report_latency(time.perf_counter() - started, tenant=self.tenant)
        hooks.decision_returned(tenant=self.tenant, run=run, decision=decision)
        return Response(_decision_body(run, decision))


class RunSpanView(TenantAPIView):
    @extend_schema(request=SpanIn, responses={201: SpanOut})
    def post(self, request, pk: int):
        data = _validated(SpanIn, request)
        span = services.run_record_span(tenant=self.tenant, run_id=pk, **data)
        return Response(SpanOut(span).data, status=status.HTTP_201_CREATED)


class RunCompleteView(TenantAPIView):
    @extend_schema(request=CompleteIn, responses={200: dict})
    def post(self, request, pk: int):
        data = _validated(CompleteIn, request)
        run, decision = services.run_complete(tenant=self.tenant, run_id=pk, **data)
        hooks.decision_returned(tenant=self.tenant, run=run, decision=decision)
        return Response(_decision_body(run, decision))
