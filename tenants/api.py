"""Tenant secrets over the API: names, masked hints and dates. A value is never returned."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.fields import StrictCharField, StrictSerializer
from tenants.audit import Actor, audit_chain_verify

from . import services
from .access import secret_for
from .models import TenantSecret


class SecretOut(serializers.ModelSerializer):
    class Meta:
        model = TenantSecret
        fields = ["name", "hint", "created_at", "updated_at"]


class SecretIn(StrictSerializer):
    value = StrictCharField(trim_whitespace=False, max_length=services.MAX_SECRET_BYTES)


class SecretListView(TenantAPIView):
    @extend_schema(responses=SecretOut(many=True))
    def get(self, request):
        secrets = TenantSecret.objects.filter(tenant=self.tenant).order_by("name")
        return Response({"results": SecretOut(secrets, many=True).data})


class SecretDetailView(TenantAPIView):
    @extend_schema(request=SecretIn, responses=SecretOut)
    def put(self, request, name: str):
        serializer = SecretIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.validate_secret_name(name)
        existed = TenantSecret.objects.filter(tenant=self.tenant, name=name).exists()
        secret = services.secret_set(tenant=self.tenant, name=name, value=serializer.validated_data["value"],
                                     actor=Actor.from_request(request))
        return Response(SecretOut(secret).data, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED)

    @extend_schema(responses={204: None})
    def delete(self, request, name: str):
        services.secret_delete(secret=secret_for(self.tenant, name), actor=Actor.from_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AuditVerifyOut(serializers.Serializer):
    ok = serializers.BooleanField()
    checked = serializers.IntegerField()
    first_broken = serializers.IntegerField(allow_null=True, help_text="The id of the first row that fails.")
    problem = serializers.CharField(help_text="What is wrong with that row; empty when ok.")


class AuditVerifyView(TenantAPIView):
    @extend_schema(responses=AuditVerifyOut,
                   description="Recompute the tenant's audit hash chain: is every row as it was written?")
    def get(self, request):
        verdict = audit_chain_verify(tenant=self.tenant)
        return Response({"ok": verdict.ok, "checked": verdict.checked, "first_broken": verdict.first_broken,
                         "problem": verdict.problem})
