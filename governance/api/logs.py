"""Evaluations and the audit log: filtered lists (cursor-paginated) and streamed exports."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import filtered, represented_list
from core.api.pagination import IdCursorPagination
from governance import exports
from governance.filters import (
    AuditExportFilter,
    AuditFilter,
    EvaluationExportFilter,
    EvaluationFilter,
)
from governance.models import Evaluation
from tenants.models import AuditEvent, KeyScope

from .serializers import AuditEventOut, EvaluationOut

FORMAT_PARAM = OpenApiParameter(
    "format",
    str,
    enum=list(exports.FORMATS),
    default="csv",
    description="Export format: CSV with a header row, or one JSON object per line.",
)


def _export_responses(what: str) -> dict:
    # One 200 per content type: the body is a stream of rows, not a JSON document.
    return {
        (200, exports.FORMATS["csv"]): OpenApiResponse(OpenApiTypes.STR, description=f"Every matching {what}, CSV."),
        (200, exports.FORMATS["jsonl"]): OpenApiResponse(
            OpenApiTypes.STR, description=f"Every matching {what}, JSON Lines."
        ),
    }


AFTER_ID_PARAM = OpenApiParameter("after_id", int, description="Resume an export after this id (the last one received)")


class _FilteredList(TenantAPIView):
    reads_replica = True  # core.routing: heavy reads, served by the read replica when there is one
    required_scope = KeyScope.READ
    filterset_class = None
    model = None
    serializer_class = None
    pagination_class = IdCursorPagination

    query_params = ("cursor", "page_size")  # beside the filters

    def filtered(self, request):
        return filtered(
            self.filterset_class, request, self.model.objects.filter(tenant=self.tenant), also=self.query_params
        )

    def get(self, request):
        rows = self.filtered(request)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(represented_list(self.serializer_class, page))


class _Export(_FilteredList):
    pagination_class = None
    query_params = ("format",)
    spec: exports.ExportSpec = None  # each export names its columns
    basename = ""

    def get(self, request):
        fmt = request.query_params.get("format", "csv")
        if fmt not in exports.FORMATS:
            return Response({"format": ["Must be one of: csv, jsonl."]}, status=status.HTTP_400_BAD_REQUEST)
        return exports.export_response(
            tenant=self.tenant, queryset=self.filtered(request), spec=self.spec, fmt=fmt, basename=self.basename
        )


class EvaluationListView(_FilteredList):
    filterset_class = EvaluationFilter
    model = Evaluation
    queryset = Evaluation.objects.none()  # for the schema: the model the filters describe
    serializer_class = EvaluationOut

    @extend_schema(responses=EvaluationOut(many=True))
    def get(self, request):
        return super().get(request)


class EvaluationExportView(_Export):
    filterset_class = EvaluationExportFilter
    model = Evaluation
    queryset = Evaluation.objects.none()
    spec = exports.EVALUATIONS
    basename = "evaluations"

    @extend_schema(parameters=[FORMAT_PARAM, AFTER_ID_PARAM], responses=_export_responses("evaluation"))
    def get(self, request):
        return super().get(request)


class AuditLogListView(_FilteredList):
    filterset_class = AuditFilter
    model = AuditEvent
    queryset = AuditEvent.objects.none()
    serializer_class = AuditEventOut

    @extend_schema(responses=AuditEventOut(many=True))
    def get(self, request):
        return super().get(request)


class AuditLogExportView(_Export):
    filterset_class = AuditExportFilter
    model = AuditEvent
    queryset = AuditEvent.objects.none()
    spec = exports.AUDIT
    basename = "audit-log"

    @extend_schema(parameters=[FORMAT_PARAM, AFTER_ID_PARAM], responses=_export_responses("audit event"))
    def get(self, request):
        return super().get(request)
