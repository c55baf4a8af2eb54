"""Evaluations and the audit log: filtered lists (cursor-paginated) and streamed exports."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import represented_list
from core.api.pagination import IdCursorPagination
from governance import exports
from governance.filters import AuditFilter, EvaluationFilter
from governance.models import Evaluation
from tenants.models import AuditEvent

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


class _FilteredList(TenantAPIView):
    filterset_class = None
    model = None
    serializer_class = None
    pagination_class = IdCursorPagination

    def filtered(self, request):
        return self.filterset_class(
            request.query_params, queryset=self.model.objects.filter(tenant=self.tenant), request=request
        )

    def get(self, request):
        filters = self.filtered(request)
        if not filters.is_valid():
            return Response(filters.errors, status=status.HTTP_400_BAD_REQUEST)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(filters.qs, request, view=self)
        return paginator.get_paginated_response(represented_list(self.serializer_class, page))


class _Export(_FilteredList):
    pagination_class = None
    columns: list[str] = []
    basename = ""

    row = None  # each export names its own row function

    def get(self, request):
        fmt = request.query_params.get("format", "csv")
        if fmt not in exports.FORMATS:
            return Response({"format": ["Must be one of: csv, jsonl."]}, status=status.HTTP_400_BAD_REQUEST)
        filters = self.filtered(request)
        if not filters.is_valid():
            return Response(filters.errors, status=status.HTTP_400_BAD_REQUEST)
        return exports.export_response(
            tenant=self.tenant, queryset=filters.qs, columns=self.columns, row=self.row, fmt=fmt, basename=self.basename
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
    filterset_class = EvaluationFilter
    model = Evaluation
    queryset = Evaluation.objects.none()
    columns = exports.EVALUATION_COLUMNS
    basename = "evaluations"
    row = staticmethod(exports.evaluation_row)

    @extend_schema(parameters=[FORMAT_PARAM], responses=_export_responses("evaluation"))
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
    filterset_class = AuditFilter
    model = AuditEvent
    queryset = AuditEvent.objects.none()
    columns = exports.AUDIT_COLUMNS
    basename = "audit-log"
    row = staticmethod(exports.audit_row)

    @extend_schema(parameters=[FORMAT_PARAM], responses=_export_responses("audit event"))
    def get(self, request):
        return super().get(request)
