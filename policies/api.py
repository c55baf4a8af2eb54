"""The policy API: thin views over policies.services; validation lives in the service."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.pagination import IdCursorPagination
from core.errors import InvalidInput
from policies.access import policy_for
from tenants.audit import Actor
from tenants.models import KeyScope

from . import services
from .models import Policy

FIELDS = ("name", "description", "category", "rules", "scope", "enabled")
REQUIRED_ON_CREATE = ("name", "category")


def policy_out(policy: Policy) -> dict:
    return {
        "id": policy.pk,
        "name": policy.name,
        "description": policy.description,
        "category": policy.category,
        "rules": policy.rules,
        "effective_rules": policy.effective_rules,
        "scope": {"agents": policy.agents},
        "enabled": policy.enabled,
        "version": policy.version,
        "created_at": serializers.DateTimeField().to_representation(policy.created_at),
        "updated_at": serializers.DateTimeField().to_representation(policy.updated_at),
    }


def _body(request, *, require: tuple[str, ...]) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise InvalidInput({"non_field_errors": ["Expected a JSON object."]})
    errors = {key: ["Unknown field."] for key in data if key not in FIELDS and key not in ("id", "version")}
    errors.update({key: ["This field is required."] for key in require if key not in data})
    if errors:
        raise InvalidInput(errors)
    return {key: data[key] for key in FIELDS if key in data}


class PolicyIn(serializers.Serializer):
    """For the schema only: the service validates (see policies.services)."""

    name = serializers.CharField()
    description = serializers.CharField(required=False)
    category = serializers.CharField()
    rules = serializers.DictField(required=False)
    scope = serializers.DictField(required=False)
    enabled = serializers.BooleanField(required=False)


class PolicyOut(PolicyIn):
    id = serializers.IntegerField()
    effective_rules = serializers.DictField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PolicyListView(TenantAPIView):
    required_scope = {"GET": KeyScope.READ, "POST": KeyScope.ADMIN}

    @extend_schema(responses=PolicyOut(many=True))
    def get(self, request):
        qs = Policy.objects.filter(tenant=self.tenant)
        category = request.query_params.get("category")
        if category:
            qs = qs.filter(category=category)
        enabled = request.query_params.get("enabled")
        if enabled in ("true", "false"):
            qs = qs.filter(enabled=enabled == "true")
        paginator = IdCursorPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response([policy_out(p) for p in page])

    @extend_schema(request=PolicyIn, responses={201: PolicyOut})
    def post(self, request):
        data = _body(request, require=REQUIRED_ON_CREATE)
        policy = services.policy_create(tenant=self.tenant, actor=Actor.from_request(request), **data)
        return Response(policy_out(policy), status=status.HTTP_201_CREATED)


class PolicyDetailView(TenantAPIView):
    required_scope = {"GET": KeyScope.READ, "PUT": KeyScope.ADMIN, "PATCH": KeyScope.ADMIN,
                      "DELETE": KeyScope.ADMIN}

    @extend_schema(responses=PolicyOut)
    def get(self, request, pk: int):
        return Response(policy_out(policy_for(self.tenant, pk)))

    @extend_schema(request=PolicyIn, responses=PolicyOut)
    def put(self, request, pk: int):
        policy = policy_for(self.tenant, pk)
        data = _body(request, require=REQUIRED_ON_CREATE)
        # PUT replaces: what the body leaves out goes back to its default.
        full = {"description": "", "rules": {}, "scope": {}, "enabled": True, **data}
        policy = services.policy_update(policy=policy, actor=Actor.from_request(request), **full)
        return Response(policy_out(policy))

    @extend_schema(request=PolicyIn, responses=PolicyOut)
    def patch(self, request, pk: int):
        policy = policy_for(self.tenant, pk)
        data = _body(request, require=())
        policy = services.policy_update(policy=policy, actor=Actor.from_request(request), **data)
        return Response(policy_out(policy))

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.policy_delete(policy=policy_for(self.tenant, pk), actor=Actor.from_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
