"""Evaluations and the audit log: filtered lists (cursor-paginated) and streamed exports."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.pagination import IdCursorPagination
from governance import exports
from governance.filters import AuditFilter, EvaluationFilter
from governance.models import Evaluation
from tenants.models import AuditEvent, KeyScope

from .serializers import AuditEventOut, EvaluationOut

FORMAT_PARAM = OpenApiParameter("format", str, enum=["csv", "jsonl"], description="Export format")


class _FilteredList(TenantAPIView):
    required_scope = KeyScope.READ
    filterset_class = None
    model = None
    serializer_class = None

    def filtered(self, request):
        fs = self.filterset_class(request.query_params, queryset=self.model.objects.filter(tenant=self.tenant),
                                  request=request)
        return fs

    def get(self, request):
        fs = self.filtered(request)
        if not fs.is_valid():
            return Response(fs.errors, status=status.HTTP_400_BAD_REQUEST)
        paginator = IdCursorPagination()
        page = paginator.paginate_queryset(fs.qs, request, view=self)
        return paginator.get_paginated_response(self.serializer_class(page, many=True).data)


class _Export(_FilteredList):
    columns: list[str] = []
    basename = ""

    row = None  # each export names its own row function

    def get(self, request):
        fmt = request.query_params.get("format", "csv")
        if fmt not in exports.FORMATS:
            return Response({"format": ["Must be one of: csv, jsonl."]}, status=status.HTTP_400_BAD_REQUEST)
        fs = self.filtered(request)
        if not fs.is_valid():
            return Response(fs.errors, status=status.HTTP_400_BAD_REQUEST)
        return exports.export_response(tenant=self.tenant, queryset=fs.qs, columns=self.columns, row=self.row,
                                       fmt=fmt, basename=self.basename)


class EvaluationListView(_FilteredList):
    filterset_class = EvaluationFilter
    model = Evaluation
    serializer_class = EvaluationOut

    @extend_schema(parameters=[], responses=EvaluationOut(many=True))
    def get(self, request):
        return super().get(request)


class EvaluationExportView(_Export):
    filterset_class = EvaluationFilter
    model = Evaluation
    columns = exports.EVALUATION_COLUMNS
    basename = "evaluations"
    row = staticmethod(exports.evaluation_row)

    @extend_schema(parameters=[FORMAT_PARAM], responses={200: str})
    def get(self, request):
        return super().get(request)


class AuditLogListView(_FilteredList):
    filterset_class = AuditFilter
    model = AuditEvent
    serializer_class = AuditEventOut

    @extend_schema(responses=AuditEventOut(many=True))
    def get(self, request):
        return super().get(request)


class AuditLogExportView(_Export):
    filterset_class = AuditFilter
    model = AuditEvent
    columns = exports.AUDIT_COLUMNS
    basename = "audit-log"
    row = staticmethod(exports.audit_row)

    @extend_schema(parameters=[FORMAT_PARAM], responses={200: str})
    def get(self, request):
        return super().get(request)
