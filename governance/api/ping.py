"""The smallest authenticated endpoint: the baseline bench/report.py measures the hot path against."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import represented
from tenants.auth import ANY_SCOPE


class PingOut(serializers.Serializer):
    tenant = serializers.CharField(help_text="The slug of the tenant the API key speaks for.")


class PingView(TenantAPIView):
    required_scope = ANY_SCOPE

    @extend_schema(responses=PingOut)
    def get(self, request):
        return Response(represented(PingOut, {"tenant": self.tenant.slug}))
