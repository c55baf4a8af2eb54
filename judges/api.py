"""On-demand grounding check (seed 003's `check_grounding` tool) over the API."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.fields import StrictCharField, StrictSerializer, UnitScoreField
from tenants.models import KeyScope

from .verification import config_for
from .verifier import check_grounding


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

    @extend_schema(request=CheckIn, responses={200: dict})
    def post(self, request):
        serializer = CheckIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rules = {k: data[k] for k in ("entailment_threshold", "contradiction_threshold", "max_unverifiable_ratio")
                 if k in data}
        result = check_grounding(data["text"], data["sources"], config_for(rules))
        return Response(result.to_dict())
