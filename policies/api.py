"""The policy API: thin views over policies.services.

The input serializer is the contract (types, unknown fields, each category's rules, all problems
at once); the service checks again, because the dashboard writes through it too.
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import represented, represented_list, validated
from core.api.fields import StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer
from core.api.pagination import IdCursorPagination
from policies.access import policy_for
from tenants.audit import Actor
from tenants.models import KeyScope

from . import services
from .categories import CATEGORIES, RuleValidationError, get_category
from .models import Mode, Policy
from .scope import MAX_AGENT_NAME_LENGTH, MAX_AGENTS

CATEGORY_NAMES = sorted(CATEGORIES)


@extend_schema_field(
    {
        "type": "object",
        # Every category's rules (only grounding so far): which apply depends on `category`.
        "properties": {spec.name: spec.json_schema() for category in CATEGORIES.values() for spec in category.rules},
        "additionalProperties": False,
        "nullable": True,
        "description": "The category's rules; docs/grounding-policies.md lists them. An unknown "
        "rule, or a value of the wrong type or range, is a 400 naming the rule.",
    }
)
class RulesField(serializers.Field):
    """Only the shape here: what the rules may hold depends on the category (checked by PolicyIn)."""

    default_error_messages = {"not_object": "Must be a JSON object."}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_object")
        return data

    def to_representation(self, value):
        return value


@extend_schema_field({"description": "Ignored: accepted so that a policy read from the API can be sent back."})
class IgnoredField(serializers.Field):
    def to_internal_value(self, data):
        return data

    def to_representation(self, value):
        return value


class ScopeIn(StrictSerializer):
    # Not trimmed: a name is matched as written (the service refuses blank ones).
    agents = serializers.ListField(
        child=StrictCharField(max_length=MAX_AGENT_NAME_LENGTH, trim_whitespace=False),
        max_length=MAX_AGENTS,
        required=False,
        help_text="Agent names or glob patterns (`support-*`); empty: every agent.",
    )


READ_ONLY = ("id", "version", "effective_rules", "created_at", "updated_at")


class PolicyIn(StrictSerializer):
    name = StrictCharField(max_length=200)
    description = StrictCharField(
        max_length=5000, required=False, allow_blank=True, allow_null=True, trim_whitespace=False
    )
    category = serializers.ChoiceField(
        choices=CATEGORY_NAMES,
        error_messages={"invalid_choice": f"Unknown category '{{input}}'. Available: {', '.join(CATEGORY_NAMES)}."},
    )
    rules = RulesField(required=False, allow_null=True)
    scope = ScopeIn(required=False, allow_null=True)
    enabled = StrictBooleanField(required=False)
    mode = serializers.ChoiceField(
        choices=Mode.choices, required=False, help_text="`shadow`: evaluated and recorded, never enforced."
    )
    # What a policy read from the API carries beyond its input: accepted and ignored, so it can be PUT back.
    id = IgnoredField(required=False, allow_null=True)
    version = IgnoredField(required=False, allow_null=True)
    effective_rules = IgnoredField(required=False, allow_null=True)
    created_at = IgnoredField(required=False, allow_null=True)
    updated_at = IgnoredField(required=False, allow_null=True)

    def to_internal_value(self, data):
        """Field errors and rule errors together, so one answer lists every problem."""
        errors: dict = {}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            errors, value = dict(exc.detail), None
        rules, category = (data.get("rules"), data.get("category")) if isinstance(data, dict) else (None, None)
        known_category = isinstance(category, str) and category in CATEGORIES
        if "rules" not in errors and isinstance(rules, dict) and known_category:
            try:
                get_category(category).clean_rules(rules)
            except RuleValidationError as exc:
                errors["rules"] = exc.errors
        if errors:
            raise serializers.ValidationError(errors)
        for ignored in READ_ONLY:
            value.pop(ignored, None)
        return value


class ScopeOut(serializers.Serializer):
    agents = serializers.ListField(child=serializers.CharField(trim_whitespace=False))


class PolicyOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(trim_whitespace=False)
    category = serializers.ChoiceField(choices=CATEGORY_NAMES)
    rules = serializers.DictField(help_text="The rules as the admin set them.")
    effective_rules = serializers.DictField(help_text="Every rule of the category: the set ones and the defaults.")
    scope = ScopeOut(source="*")
    enabled = serializers.BooleanField()
    mode = serializers.ChoiceField(choices=Mode.choices)
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PolicyListQuery(serializers.Serializer):
    category = serializers.CharField(required=False)
    enabled = serializers.ChoiceField(choices=["true", "false"], required=False)


LIST_PARAMETERS = [
    OpenApiParameter("category", str, description="Only policies of this category."),
    OpenApiParameter("enabled", str, enum=["true", "false"], description="Only enabled (or disabled) policies."),
]


class PolicyListView(TenantAPIView):
    pagination_class = IdCursorPagination
    required_scope = {"GET": KeyScope.READ, "POST": KeyScope.ADMIN}

    @extend_schema(parameters=LIST_PARAMETERS, responses=PolicyOut(many=True))
    def get(self, request):
        query = validated(PolicyListQuery, request.query_params.dict())
        qs = Policy.objects.filter(tenant=self.tenant)
        if query.get("category"):
            qs = qs.filter(category=query["category"])
        if "enabled" in query:
            qs = qs.filter(enabled=query["enabled"] == "true")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(represented_list(PolicyOut, page))

    @extend_schema(request=PolicyIn, responses={201: PolicyOut})
    def post(self, request):
        data = validated(PolicyIn, request.data)
        policy = services.policy_create(tenant=self.tenant, actor=Actor.from_request(request), **data)
        return Response(represented(PolicyOut, policy), status=status.HTTP_201_CREATED)


class PolicyDetailView(TenantAPIView):
    required_scope = {"GET": KeyScope.READ, "PUT": KeyScope.ADMIN, "PATCH": KeyScope.ADMIN, "DELETE": KeyScope.ADMIN}

    @extend_schema(responses=PolicyOut)
    def get(self, request, pk: int):
        return Response(represented(PolicyOut, policy_for(self.tenant, pk)))

    @extend_schema(request=PolicyIn, responses=PolicyOut)
    def put(self, request, pk: int):
        policy = policy_for(self.tenant, pk)
        data = validated(PolicyIn, request.data)
        # PUT replaces: what the body leaves out goes back to its default.
        full = {"description": "", "rules": {}, "scope": {}, "enabled": True, **data}
        policy = services.policy_update(policy=policy, actor=Actor.from_request(request), **full)
        return Response(represented(PolicyOut, policy))

    @extend_schema(request=PolicyIn, responses=PolicyOut)
    def patch(self, request, pk: int):
        policy = policy_for(self.tenant, pk)
        data = validated(PolicyIn, request.data, partial=True)
        policy = services.policy_update(policy=policy, actor=Actor.from_request(request), **data)
        return Response(represented(PolicyOut, policy))

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.policy_delete(policy=policy_for(self.tenant, pk), actor=Actor.from_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RollbackIn(StrictSerializer):
    version = StrictIntegerField(min_value=1, max_value=2**31 - 1)


class PolicyRollbackView(TenantAPIView):
    required_scope = KeyScope.ADMIN

    @extend_schema(
        request=RollbackIn,
        responses={200: PolicyOut},
        description="Make a new version with the rules, scope and enabled state of `version`.",
    )
    def post(self, request, pk: int):
        policy = policy_for(self.tenant, pk)
        data = validated(RollbackIn, request.data)
        policy = services.policy_rollback(policy=policy, version=data["version"], actor=Actor.from_request(request))
        return Response(represented(PolicyOut, policy))
