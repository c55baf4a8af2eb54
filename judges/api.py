"""On-demand grounding check over the API: the local verifier's `check_grounding` (docs/judges.md)."""

import time

from django.conf import settings
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from core import metrics
from core.api.base import TenantAPIView
from core.api.contract import represented, validated
from core.api.fields import StrictCharField, StrictIntegerField, StrictSerializer, UnitScoreField
from policies.categories import CATEGORIES
from tenants.models import KeyScope
from tenants.throttling import check_slot

from .budget import OverLimit, enforce_body_limit, enforce_hard_limits
from .escalation import annotate
from .verification import checked_with_escalation
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


# The escalation options are the grounding rules of the same names: same choices, range and model check.
_RULE = CATEGORIES["grounding"].rule
_ESCALATION = _RULE("nli_escalation")
_ESCALATION_MODEL = _RULE("nli_escalation_model")
_ESCALATION_MAX = _RULE("nli_escalation_max_claims")
OPTION_NAMES = (
    "entailment_threshold",
    "contradiction_threshold",
    "max_unverifiable_ratio",
    "nli_escalation",
    "nli_escalation_model",
    "nli_escalation_max_claims",
)


@extend_schema_field(_ESCALATION_MODEL.json_schema())
class ModelNameField(StrictCharField):
    """A model name as the rule accepts it; the schema carries its pattern."""


class CheckIn(StrictSerializer):
    text = StrictCharField(max_length=50_000, allow_blank=True)
    sources = serializers.ListField(child=SourceField(), max_length=MAX_SOURCES)
    entailment_threshold = UnitScoreField(required=False)
    contradiction_threshold = UnitScoreField(required=False)
    max_unverifiable_ratio = UnitScoreField(required=False)
    nli_escalation = serializers.ChoiceField(
        choices=_ESCALATION.choices, required=False, help_text=_ESCALATION.help + " Default off."
    )
    nli_escalation_model = ModelNameField(
        required=False, max_length=_ESCALATION_MODEL.max_length, help_text=_ESCALATION_MODEL.help
    )
    nli_escalation_max_claims = StrictIntegerField(
        required=False,
        min_value=_ESCALATION_MAX.minimum,
        max_value=_ESCALATION_MAX.maximum,
        help_text=_ESCALATION_MAX.help,
    )

    def validate_nli_escalation_model(self, value):
        try:
            return _ESCALATION_MODEL.clean(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc


class SourceMatchOut(serializers.Serializer):
    id = serializers.CharField()
    content = serializers.CharField(trim_whitespace=False)
    score = serializers.FloatField()
    span = serializers.CharField(trim_whitespace=False, help_text="The sentence of the source that matched best.")
    relevance = serializers.FloatField(allow_null=True)


class EvidenceSpanOut(serializers.Serializer):
    source_id = serializers.CharField()
    span = serializers.CharField(trim_whitespace=False, help_text="The source sentence the verdict rests on.")
    similarity = serializers.FloatField()


class ClaimEscalationOut(serializers.Serializer):
    local = serializers.CharField(help_text="The local verifier's verdict.")
    model = serializers.CharField()
    llm = serializers.CharField(allow_null=True, help_text="The LLM's verdict; null when the local one was kept.")
    confidence = serializers.FloatField(required=False, allow_null=True)
    cached = serializers.BooleanField(required=False, help_text="From the tenant's cache: no call, no cost.")
    latency_ms = serializers.FloatField(required=False, allow_null=True, help_text="The call's latency.")
    cost_usd = serializers.FloatField(required=False, allow_null=True, help_text="This claim's share of the call.")
    kept = serializers.CharField(required=False, help_text="Why the local verdict was kept.")


class ClaimVerdictOut(serializers.Serializer):
    claim = serializers.CharField(trim_whitespace=False)
    verdict = serializers.ChoiceField(choices=[SUPPORTED, CONTRADICTED, UNVERIFIABLE])
    confidence = serializers.FloatField()
    best_source = SourceMatchOut(allow_null=True)
    reason = serializers.CharField()
    escalated = serializers.BooleanField(help_text="True when the LLM escalation gave this verdict.")
    decided_by = serializers.CharField(
        allow_null=True, required=False, help_text='What decided the verdict: "combiner", "fact_backstop" or "llm".'
    )
    kind = serializers.CharField(allow_null=True, help_text="For a contradiction: number, date, negation ...")
    # docs/verifier.md: every claim verdict carries the spans used, the facts matched and what failed.
    evidence = EvidenceSpanOut(many=True, help_text="Every source sentence the verdict rests on.")
    matched = serializers.ListField(
        child=serializers.CharField(), help_text='The claim\'s facts found in the evidence, e.g. "about 540 km".'
    )
    failed = serializers.CharField(
        allow_null=True, help_text='What failed: "number mismatch: 12 vs 15", "missing: \'Q3 2024\'" ...'
    )
    probabilities = serializers.DictField(
        child=serializers.FloatField(), allow_null=True, help_text="The local verifier's probability of each verdict."
    )
    thresholds_input = serializers.DictField(
        allow_null=True, help_text="What re-deciding the verdict under other thresholds needs besides probabilities."
    )
    undecided = serializers.BooleanField(
        help_text="The local verifier compared the claim with source text and reached neither threshold: the band "
        'an nli_escalation of "llm" sends to the LLM.'
    )
    escalation = ClaimEscalationOut(
        required=False, help_text="What the LLM escalation did to this claim; absent when it was not escalated."
    )


class EscalationOut(serializers.Serializer):
    status = serializers.CharField(
        help_text='"ok", "nothing_to_escalate", or why the local verdicts were kept: "error", "timeout", '
        '"no_api_key", "unparseable", "budget_spent".'
    )
    model = serializers.CharField()
    provider = serializers.CharField(required=False, allow_null=True)
    undecided = serializers.IntegerField(help_text="Claims the local verifier left undecided.")
    escalated = serializers.IntegerField(help_text="Claims whose verdict the LLM gave.")
    cached = serializers.BooleanField(help_text="The answer came from the tenant's cache: no call, no cost.")
    latency_ms = serializers.FloatField(required=False, allow_null=True)
    input_tokens = serializers.IntegerField(required=False, allow_null=True)
    output_tokens = serializers.IntegerField(required=False, allow_null=True)
    cost_usd = serializers.FloatField(required=False, allow_null=True)
    attempts = serializers.IntegerField(required=False, allow_null=True)
    error = serializers.CharField(required=False, allow_blank=True, help_text="A fixed message, never upstream text.")
    http_status = serializers.IntegerField(required=False, allow_null=True)


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
        child=serializers.CharField(),
        help_text="What the request's work budget left unchecked (judges/budget.py), and why an asked-for "
        "LLM escalation kept the local verdicts.",
    )
    escalation = EscalationOut(allow_null=True, help_text="The LLM escalation's call; null when it is off.")


def _over_limit(exc: OverLimit, request) -> dict:
    # The API's error shape ({"detail", "request_id"}), and the limit's field named as a 400 names a field.
    return {"detail": exc.message, exc.field: [exc.message], "request_id": getattr(request, "request_id", "")}


_RETRY = {"Retry-After": "1"}  # a check takes about a second at most (judges/budget.py)


def _busy(limit: int, request) -> dict:
    return {
        "detail": f"This API key already has {limit} grounding checks in flight, the most it may have at once "
        f"(GROUNDING_CHECK_MAX_IN_FLIGHT); retry when one has finished.",
        "request_id": getattr(request, "request_id", ""),
    }


class GroundingCheckView(TenantAPIView):
    required_scope = KeyScope.AGENT

    @extend_schema(request=CheckIn, responses={200: CheckOut})
    def post(self, request):
        # An escalated check holds the caller like an inline judge: within JUDGE_SYNC_BUDGET_SECONDS.
        deadline = time.monotonic() + settings.JUDGE_SYNC_BUDGET_SECONDS
        try:  # before the body is read: parsing a megabyte of JSON is itself the work to avoid
            enforce_body_limit(request.META.get("CONTENT_LENGTH"))
        except OverLimit as exc:
            return Response(_over_limit(exc, request), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        data = validated(CheckIn, request.data)
        rules = {k: data[k] for k in OPTION_NAMES if k in data}
        try:
            enforce_hard_limits(data["sources"])
        except OverLimit as exc:
            return Response(_over_limit(exc, request), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        limit = settings.GROUNDING_CHECK_MAX_IN_FLIGHT
        with check_slot(request.auth, limit) as admitted:
            if not admitted:
                return Response(_busy(limit, request), status=status.HTTP_429_TOO_MANY_REQUESTS, headers=_RETRY)
            result, warnings, escalation, escalation_warnings = checked_with_escalation(
                tenant=request.tenant, text=data["text"], sources=data["sources"], rules=rules, deadline=deadline
            )
        if escalation and escalation.get("provider") and escalation["status"] != "nothing_to_escalate":
            metrics.observe_provider_call(escalation, request.tenant)
        checked = result.to_dict()
        annotate(checked["claims"], escalation)
        body = {**checked, "warnings": warnings + escalation_warnings, "escalation": escalation}
        return Response(represented(CheckOut, body))
