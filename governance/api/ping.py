"""The smallest authenticated endpoint: the baseline bench/report.py measures the hot path against."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.api.base import TenantAPIView
from tenants.auth import ANY_SCOPE


class PingView(TenantAPIView):
    required_scope = ANY_SCOPE

    @extend_schema(responses=inline_serializer("Ping", {"tenant": serializers.CharField()}))
    def get(self, request):
        return Response({"tenant": self.tenant.slug})
