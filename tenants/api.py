"""Tenant secrets over the API: names, masked hints and dates. A value is never returned."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import represented, represented_list, validated
from core.api.fields import StrictCharField, StrictSerializer
from tenants.audit import Actor

from . import services
from .access import secret_for
from .models import TenantSecret


class SecretOut(serializers.ModelSerializer):
    class Meta:
        model = TenantSecret
        fields = ["name", "hint", "created_at", "updated_at"]
        read_only_fields = fields


class SecretListOut(serializers.Serializer):
    """Every secret of the tenant, by name: a short list, so not paginated."""

    results = SecretOut(many=True)


class SecretIn(StrictSerializer):
    value = StrictCharField(trim_whitespace=False, max_length=services.MAX_SECRET_BYTES)


class SecretListView(TenantAPIView):
    @extend_schema(responses=SecretListOut)
    def get(self, request):
        secrets = TenantSecret.objects.filter(tenant=self.tenant).order_by("name")
        return Response({"results": represented_list(SecretOut, secrets)})


class SecretDetailView(TenantAPIView):
    @extend_schema(request=SecretIn, responses={200: SecretOut, 201: SecretOut})
    def put(self, request, name: str):
        data = validated(SecretIn, request.data)
        services.validate_secret_name(name)
        existed = TenantSecret.objects.filter(tenant=self.tenant, name=name).exists()
        secret = services.secret_set(
            tenant=self.tenant, name=name, value=data["value"], actor=Actor.from_request(request)
        )
        answer = status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        return Response(represented(SecretOut, secret), status=answer)

    @extend_schema(responses={204: None})
    def delete(self, request, name: str):
        services.secret_delete(secret=secret_for(self.tenant, name), actor=Actor.from_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
