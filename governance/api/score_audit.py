"""The score audit over the API (docs/score-audit.md): the tenant's rate, and inflation per agent."""

from datetime import UTC, date, datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import known_query
from core.api.fields import StrictSerializer, UnitScoreField
from governance import score_audit
from policies.categories.grounding import GROUNDING_RULES
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import KeyScope

_MODEL_RULE = next(spec for spec in GROUNDING_RULES if spec.name == "llm_grounding_model")
_MODEL_RULE_MESSAGE = f"Must be a model name starting with {', '.join(_MODEL_RULE.prefixes)}."


class ScoreAuditRateIn(StrictSerializer):
    rate = UnitScoreField(required=False)
    auditor = serializers.ChoiceField(
        choices=score_audit.AUDITORS,
        required=False,
        help_text='Who measures sampled reports: "local" (the local verifier) or "llm" (the tenant\'s LLM judge).',
    )
    # The judge model's own rule: its pattern goes into the schema; the service says what is wrong.
    model = serializers.CharField(
        max_length=200,
        required=False,
        validators=[RegexValidator(_MODEL_RULE.pattern, _MODEL_RULE_MESSAGE)],
        help_text="The LLM auditor's model: gpt-*, claude-*, llama-* or mixtral-*.",
    )

    def validate(self, attrs):
        if not attrs:
            raise ValidationError({"rate": ["Give rate, auditor or model."]})
        return attrs


class ScoreAuditRateOut(serializers.Serializer):
    rate = serializers.FloatField()
    auditor = serializers.CharField()
    model = serializers.CharField()


class AgentFiguresOut(serializers.Serializer):
    agent_name = serializers.CharField()
    auditor = serializers.CharField(help_text='"local" or "llm": whose measures these figures are (never mixed).')
    cost_usd = serializers.FloatField(help_text="What the LLM auditor's calls cost over the window (0 for local).")
    audited_reports = serializers.IntegerField()
    not_auditable = serializers.IntegerField()
    reported_mean = serializers.FloatField(allow_null=True)
    measured_mean = serializers.FloatField(allow_null=True)
    inflation = serializers.FloatField(allow_null=True, help_text="Mean of reported − measured.")
    inflation_low = serializers.FloatField(
        allow_null=True, help_text="Lower end of the 95% interval of the mean gap; null under 2 samples."
    )
    inflation_high = serializers.FloatField(
        allow_null=True, help_text="Upper end of the 95% interval of the mean gap; null under 2 samples."
    )
    few_samples = serializers.BooleanField(
        help_text=f"Fewer than {score_audit.MIN_SAMPLES} audited reports: too few to judge."
    )
    needs_attention = serializers.BooleanField(
        help_text=f"{score_audit.MIN_SAMPLES} or more audited reports and the 95% interval of the mean gap wholly "
        f"above {score_audit.ATTENTION_GAP}."
    )
    correlation = serializers.FloatField(allow_null=True, help_text="Pearson's r; null under 10 samples.")


class DayOut(serializers.Serializer):
    date = serializers.DateField()
    audited = serializers.IntegerField()
    reported_mean = serializers.FloatField(allow_null=True)
    measured_mean = serializers.FloatField(allow_null=True)
    inflation = serializers.FloatField(allow_null=True)
    margin = serializers.FloatField(
        allow_null=True, help_text="Half the width of the day's 95% band around each mean (from the count alone)."
    )
    few_samples = serializers.BooleanField(help_text=f"Fewer than {score_audit.MIN_SAMPLES} audited reports that day.")


class AgentScoreAuditOut(AgentFiguresOut):
    by_day = DayOut(many=True)


WINDOW = [
    OpenApiParameter("since", str, description="First day (ISO 8601 date or date-time), inclusive."),
    OpenApiParameter("until", str, description="Last day (ISO 8601 date or date-time), inclusive."),
]


def _day(params, name: str) -> date | None:
    raw = params.get(name)
    if raw is None:  # left out; an empty value is refused, as on every endpoint
        return None
    try:
        value = datetime.fromisoformat(raw)
        # The days are UTC days (an audit's day is its report's UTC date): a date-time with an
        # offset names the UTC day it falls in, not the day on the sender's clock.
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: 9999-12-31T23:00-05:00 is past year 9999 in UTC
        raise ValidationError({name: ["Must be an ISO 8601 date or date-time."]}) from None
    return value.date()


def _window(request, also: tuple[str, ...] = ()) -> tuple[date | None, date | None]:
    known_query(request, ("since", "until", *also))
    since, until = _day(request.query_params, "since"), _day(request.query_params, "until")
    if since and until and since > until:
        raise ValidationError({"until": ["Must not be before since."]})
    return since, until


class ScoreAuditRateView(TenantAPIView):
    required_scope = {"GET": KeyScope.READ, "PUT": KeyScope.ADMIN}

    @extend_schema(responses=ScoreAuditRateOut)
    def get(self, request):
        return Response(_settings_of(self.tenant))

    @extend_schema(request=ScoreAuditRateIn, responses=ScoreAuditRateOut)
    def put(self, request):
        data = ScoreAuditRateIn(data=request.data)
        data.is_valid(raise_exception=True)
        given, actor, tenant = data.validated_data, Actor.from_request(request), self.tenant
        with transaction.atomic():
            if "rate" in given:
                tenant = tenant_services.tenant_set_score_audit_rate(tenant=tenant, rate=given["rate"], actor=actor)
            if "auditor" in given or "model" in given:
                try:
                    tenant = tenant_services.tenant_set_score_auditor(
                        tenant=tenant,
                        auditor=given.get("auditor", tenant.score_audit_auditor),
                        model=given.get("model", tenant.score_audit_model),
                        actor=actor,
                    )
                except DjangoValidationError as exc:
                    fields = {"score_audit_auditor": "auditor", "score_audit_model": "model"}
                    raise ValidationError({fields.get(k, k): v for k, v in exc.message_dict.items()}) from None
        return Response(_settings_of(tenant))


def _settings_of(tenant) -> dict:
    return {"rate": tenant.score_audit_rate, "auditor": tenant.score_audit_auditor, "model": tenant.score_audit_model}


class ScoreAuditListView(TenantAPIView):
    error_statuses = {"get": (400,)}  # a bad since/until
    required_scope = KeyScope.READ
    reads_replica = True

    @extend_schema(
        parameters=WINDOW,
        responses=inline_serializer("ScoreAuditList", {"agents": AgentFiguresOut(many=True)}),
    )
    def get(self, request):
        since, until = _window(request)
        return Response({"agents": score_audit.agents_summary(tenant=self.tenant, since=since, until=until)})


class AgentScoreAuditView(TenantAPIView):
    error_statuses = {"get": (400,)}
    required_scope = KeyScope.READ
    reads_replica = True  # core.routing: an aggregate read

    @extend_schema(
        parameters=[
            *WINDOW,
            OpenApiParameter(
                "auditor", str, enum=score_audit.AUDITORS, description='Whose figures: "local" (default) or "llm".'
            ),
        ],
        responses=AgentScoreAuditOut,
    )
    def get(self, request, agent_name: str):
        if len(agent_name) > 200 or "\x00" in agent_name:  # no such agent can exist
            raise NotFound("No runs of this agent.")
        if not score_audit.agent_known(tenant=self.tenant, agent_name=agent_name):
            raise NotFound("No runs of this agent.")
        since, until = _window(request, also=("auditor",))
        auditor = request.query_params.get("auditor") or score_audit.LOCAL
        if auditor not in score_audit.AUDITORS:
            raise ValidationError({"auditor": ['Must be "local" or "llm".']})
        return Response(
            score_audit.agent_summary(
                tenant=self.tenant, agent_name=agent_name, auditor=auditor, since=since, until=until
            )
        )
