"""The score audit over the API (docs/score-audit.md): the tenant's rate, and inflation per agent."""

from datetime import UTC, date, datetime

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import known_query
from core.api.fields import StrictSerializer, UnitScoreField
from governance import score_audit
from governance.models import AgentScoreAuditDay, Run
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import KeyScope


class ScoreAuditRateIn(StrictSerializer):
    rate = UnitScoreField()


class ScoreAuditRateOut(serializers.Serializer):
    rate = serializers.FloatField()


class AgentFiguresOut(serializers.Serializer):
    agent_name = serializers.CharField()
    audited_reports = serializers.IntegerField()
    not_auditable = serializers.IntegerField()
    reported_mean = serializers.FloatField(allow_null=True)
    measured_mean = serializers.FloatField(allow_null=True)
    inflation = serializers.FloatField(allow_null=True, help_text="Mean of reported − measured.")
    correlation = serializers.FloatField(allow_null=True, help_text="Pearson's r; null under 10 samples.")


class DayOut(serializers.Serializer):
    date = serializers.DateField()
    audited = serializers.IntegerField()
    reported_mean = serializers.FloatField(allow_null=True)
    measured_mean = serializers.FloatField(allow_null=True)
    inflation = serializers.FloatField(allow_null=True)


class AgentScoreAuditOut(AgentFiguresOut):
    by_day = DayOut(many=True)


WINDOW = [
    OpenApiParameter("since", str, description="First day (ISO 8601 date or date-time), inclusive."),
    OpenApiParameter("until", str, description="Last day (ISO 8601 date or date-time), inclusive."),
]


def _day(params, name: str) -> date | None:
    raw = params.get(name)
    if raw in (None, ""):
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


def _window(request) -> tuple[date | None, date | None]:
    known_query(request, ("since", "until"))
    since, until = _day(request.query_params, "since"), _day(request.query_params, "until")
    if since and until and since > until:
        raise ValidationError({"until": ["Must not be before since."]})
    return since, until


class ScoreAuditRateView(TenantAPIView):
    required_scope = {"GET": KeyScope.READ, "PUT": KeyScope.ADMIN}

    @extend_schema(responses=ScoreAuditRateOut)
    def get(self, request):
        return Response({"rate": self.tenant.score_audit_rate})

    @extend_schema(request=ScoreAuditRateIn, responses=ScoreAuditRateOut)
    def put(self, request):
        data = ScoreAuditRateIn(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = tenant_services.tenant_set_score_audit_rate(
            tenant=self.tenant, rate=data.validated_data["rate"], actor=Actor.from_request(request)
        )
        return Response({"rate": tenant.score_audit_rate})


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

    @extend_schema(parameters=WINDOW, responses=AgentScoreAuditOut)
    def get(self, request, agent_name: str):
        if len(agent_name) > 200 or "\x00" in agent_name:  # no such agent can exist
            raise NotFound("No runs of this agent.")
        # Known by its runs or, once retention removed those, by the daily sums the list shows it by.
        if not (
            Run.objects.filter(tenant=self.tenant, agent_name=agent_name).exists()
            or AgentScoreAuditDay.objects.filter(tenant=self.tenant, agent_name=agent_name).exists()
        ):
            raise NotFound("No runs of this agent.")
        since, until = _window(request)
        return Response(score_audit.agent_summary(tenant=self.tenant, agent_name=agent_name, since=since, until=until))
