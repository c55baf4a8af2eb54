"""On-demand grounding check (seed 003's `check_grounding` tool) over the API."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.fields import StrictCharField, StrictSerializer, UnitScoreField
from tenants.models import KeyScope

from .budget import OverLimit, budgeted_check, enforce_body_limit, enforce_hard_limits
from .verification import config_for


class SourceField(serializers.Field):
    """A source as plain text, or as {"id", "text", "score"?}."""

    default_error_messages = {"invalid": 'Must be a string or an object {{"id", "text", "score"?}}.'}

    def to_internal_value(self, data):
        if isinstance(data, str):
            if len(data) > 20_000 or "\x00" in data:
                self.fail("invalid")
            return data
        if isinstance(data, dict) and set(data) <= {"id", "text", "score"} and isinstance(data.get("text"), str):
            score = data.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                      or not 0 <= score <= 1):
                self.fail("invalid")
            if not isinstance(data.get("id", ""), str) or len(data["text"]) > 20_000 or "\x00" in data["text"]:
                self.fail("invalid")
            return data
        self.fail("invalid")

    def to_representation(self, value):
        return value


class CheckIn(StrictSerializer):
    text = StrictCharField(max_length=50_000, allow_blank=True)
    sources = serializers.ListField(child=SourceField(), max_length=50)
    entailment_threshold = UnitScoreField(required=False)
    contradiction_threshold = UnitScoreField(required=False)
    max_unverifiable_ratio = UnitScoreField(required=False)


class GroundingCheckView(TenantAPIView):
    required_scope = KeyScope.AGENT

    @extend_schema(request=CheckIn, responses={200: dict, 413: dict})
    def post(self, request):
        try:  # before the body is read: parsing a megabyte of JSON is itself the work to avoid
            enforce_body_limit(request.META.get("CONTENT_LENGTH"))
        except OverLimit as exc:
            return Response({exc.field: [exc.message]}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        serializer = CheckIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rules = {k: data[k] for k in ("entailment_threshold", "contradiction_threshold", "max_unverifiable_ratio")
                 if k in data}
        try:
            enforce_hard_limits(data["sources"])
        except OverLimit as exc:
            return Response({exc.field: [exc.message]}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        result, warnings = budgeted_check(data["text"], data["sources"], config_for(rules))
        body = result.to_dict()
        if warnings:
            body["warnings"] = warnings
        return Response(body)
