"""On-demand grounding check over the API: the local verifier's `check_grounding` (README "Local verifier")."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import represented, validated
from core.api.fields import StrictCharField, StrictSerializer, UnitScoreField
from tenants.models import KeyScope

from .budget import OverLimit, budgeted_check, enforce_body_limit, enforce_hard_limits
from .verification import config_for
from .verifier import CONTRADICTED, SUPPORTED, UNVERIFIABLE

MAX_SOURCE_CHARS = 20_000
MAX_SOURCES = 50


class SourceIn(StrictSerializer):
    id = StrictCharField(required=False, allow_blank=True, help_text="Defaults to `source-<index>`.")
    text = StrictCharField(max_length=MAX_SOURCE_CHARS, allow_blank=True, trim_whitespace=False)
    score = UnitScoreField(required=False, allow_null=True, help_text="The retrieval score, if any.")


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "maxLength": MAX_SOURCE_CHARS, "description": "The source's text."},
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["text"],
                "properties": {
                    "id": {"type": "string"},
                    "text": {"type": "string", "maxLength": MAX_SOURCE_CHARS},
                    "score": {"type": "number", "minimum": 0, "maximum": 1, "nullable": True},
                },
            },
        ],
    }
)
class SourceField(serializers.Field):
    """A source as plain text, or as {"id"?, "text", "score"?}."""

    default_error_messages = {"invalid": 'Must be a string or an object {{"id"?, "text", "score"?}}.'}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._as_text = StrictCharField(max_length=MAX_SOURCE_CHARS, allow_blank=True, trim_whitespace=False)

    def to_internal_value(self, data):
        if isinstance(data, str):
            return self._as_text.run_validation(data)
        if isinstance(data, dict):
            return {key: value for key, value in validated(SourceIn, data).items()}
        self.fail("invalid")

    def to_representation(self, value):
        return value


class CheckIn(StrictSerializer):
    text = StrictCharField(max_length=50_000, allow_blank=True)
    sources = serializers.ListField(child=SourceField(), max_length=MAX_SOURCES)
    entailment_threshold = UnitScoreField(required=False)
    contradiction_threshold = UnitScoreField(required=False)
    max_unverifiable_ratio = UnitScoreField(required=False)


class SourceMatchOut(serializers.Serializer):
    id = serializers.CharField()
    content = serializers.CharField(trim_whitespace=False)
    score = serializers.FloatField()
    span = serializers.CharField(trim_whitespace=False, help_text="The sentence of the source that matched best.")
    relevance = serializers.FloatField(allow_null=True)


class ClaimVerdictOut(serializers.Serializer):
    claim = serializers.CharField(trim_whitespace=False)
    verdict = serializers.ChoiceField(choices=[SUPPORTED, CONTRADICTED, UNVERIFIABLE])
    confidence = serializers.FloatField()
    best_source = SourceMatchOut(allow_null=True)
    reason = serializers.CharField()
    escalated = serializers.BooleanField()
    kind = serializers.CharField(allow_null=True, help_text="For a contradiction: number, date, negation ...")


class CheckOut(serializers.Serializer):
    grounded = serializers.BooleanField()
    claims = ClaimVerdictOut(many=True)
    total_claims = serializers.IntegerField()
    supported_count = serializers.IntegerField()
    contradicted_count = serializers.IntegerField()
    unverifiable_count = serializers.IntegerField()
    unverifiable_ratio = serializers.FloatField()
    summary = serializers.CharField()
    reason_code = serializers.CharField(allow_null=True)
    method = serializers.CharField()
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="What the request's work budget left unchecked (judges/budget.py)."
    )


def _over_limit(exc: OverLimit) -> dict:
    # The API's error shape ({"detail"}), and the limit's field named as a 400 names a field.
    return {"detail": exc.message, exc.field: [exc.message]}


class GroundingCheckView(TenantAPIView):
    required_scope = KeyScope.AGENT

    @extend_schema(request=CheckIn, responses={200: CheckOut})
    def post(self, request):
        try:  # before the body is read: parsing a megabyte of JSON is itself the work to avoid
            enforce_body_limit(request.META.get("CONTENT_LENGTH"))
        except OverLimit as exc:
            return Response(_over_limit(exc), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        data = validated(CheckIn, request.data)
        rules = {
            k: data[k]
            for k in ("entailment_threshold", "contradiction_threshold", "max_unverifiable_ratio")
            if k in data
        }
        try:
            enforce_hard_limits(data["sources"])
        except OverLimit as exc:
            return Response(_over_limit(exc), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        result, warnings = budgeted_check(data["text"], data["sources"], config_for(rules))
        return Response(represented(CheckOut, {**result.to_dict(), "warnings": warnings}))
