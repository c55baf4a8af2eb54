"""POST /api/v1/policies/replay/: what would a candidate policy have decided on past runs?
GET /api/v1/policies/{id}/calibration/: what reviewers' verdicts say about its thresholds.

Small windows answer inline (200); more than REPLAY_SYNC_MAX_REPORTS reports answer 202 with a
status URL that a Celery task fills in (governance/replay.py).
"""

import time

from django.db import transaction
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import represented
from core.api.fields import StrictSerializer
from core.lookup import pk_or_404
from core.routing import replica_reads
from governance import replay
from governance.calibration import policy_calibration
from governance.models import Evaluation, ReplayJob
from governance.tasks import replay_job
from outbox.services import enqueue
from policies.access import policy_for
from tenants.models import KeyScope


class CandidateIn(StrictSerializer):
    category = serializers.CharField()
    rules = serializers.DictField(required=False)
    scope = serializers.DictField(required=False)


class ReplayIn(StrictSerializer):
    """The schema of the body; governance.replay.replay_request validates it (the editor's form goes there too)."""

    policy = CandidateIn(required=False, help_text="A candidate that is not saved.")
    policy_id = serializers.IntegerField(
        required=False,
        help_text="Replay this policy's `version` in its place (or, with `policy`, the candidate in its place).",
    )
    version = serializers.IntegerField(required=False)
    since = serializers.DateTimeField(required=False, help_text="Default: 7 days before `until`.")
    until = serializers.DateTimeField(required=False, help_text="Default: now.")
    agents = serializers.ListField(child=serializers.CharField(), required=False)


class CountsOut(serializers.Serializer):
    allow = serializers.IntegerField()
    warn = serializers.IntegerField()
    block = serializers.IntegerField()


class ChangedOut(serializers.Serializer):
    run_id = serializers.IntegerField()
    phase = serializers.CharField()
    before = serializers.CharField()
    after = serializers.CharField()
    reason = serializers.CharField()


class ReplayOut(serializers.Serializer):
    reports = serializers.IntegerField()
    runs = serializers.IntegerField()
    before = CountsOut()
    after = CountsOut()
    changed_runs = serializers.IntegerField()
    changed = ChangedOut(many=True)
    judges_reused = serializers.IntegerField(
        help_text="Judge verdicts re-thresholded from the judge's stored output (never re-run)."
    )
    judges_missing = serializers.IntegerField(
        help_text="Judge verdicts a policy asks for where nothing usable is stored: left out of both sides."
    )
    elapsed_ms = serializers.IntegerField()


class ReplayJobOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=ReplayJob.Status.choices)
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    status_url = serializers.CharField()
    result = ReplayOut(allow_null=True)
    error = serializers.CharField()


def _job_out(request, job: ReplayJob) -> dict:
    return {
        "id": job.pk,
        "status": job.status,
        "total": job.total,
        "done": job.done,
        "status_url": request.build_absolute_uri(reverse("api-policy-replay-job", args=[job.pk])),
        # A job finished before judges were replayed has neither count: none were.
        "result": {"judges_reused": 0, "judges_missing": 0, **job.result} if job.result else job.result,
        "error": job.error,
    }


class ReplayView(TenantAPIView):
    required_scope = KeyScope.READ  # a what-if over stored runs: it changes nothing
    error_statuses = {"post": (404,)}  # a policy_id of no policy of the tenant

    @extend_schema(request=ReplayIn, responses={200: ReplayOut, 202: OpenApiResponse(ReplayJobOut)})
    def post(self, request):
        started = time.perf_counter()
        plan = replay.replay_request(tenant=self.tenant, data=request.data)  # the policies: the primary
        with replica_reads(request):  # the stored runs: a heavy read that changes nothing (core.routing)
            total = replay.report_count(tenant_id=self.tenant.pk, plan=plan)
        if total > replay.sync_limit():
            with transaction.atomic():
                job = replay.replay_job_create(tenant=self.tenant, plan=plan, total=total)
                enqueue(task=replay_job, kwargs={"job_id": job.pk})
            job.refresh_from_db()
            return Response(
                _job_out(request, job),
                status=status.HTTP_202_ACCEPTED,
                headers={"Location": _job_out(request, job)["status_url"]},
            )
        with replica_reads(request):
            result = replay.replay_run(tenant_id=self.tenant.pk, plan=plan)
        result["elapsed_ms"] = int((time.perf_counter() - started) * 1000)
        return Response(result)


class ReplayJobView(TenantAPIView):
    required_scope = KeyScope.READ

    @extend_schema(responses=ReplayJobOut)
    def get(self, request, pk: int):
        job = get_object_or_404(ReplayJob.objects.filter(tenant=self.tenant), pk=pk_or_404(pk))
        return Response(_job_out(request, job))


class PrecisionOut(serializers.Serializer):
    reviewed = serializers.IntegerField()
    confirmed = serializers.IntegerField()
    precision = serializers.FloatField(allow_null=True, help_text="Confirmed ÷ reviewed; null with none reviewed.")


@extend_schema_field(OpenApiTypes.NUMBER)
class NumberOut(serializers.Field):
    """A rule's value as it is: a whole number stays one (a count threshold), a fraction a float."""

    def to_representation(self, value):
        return value


class ThresholdOut(serializers.Serializer):
    rule = serializers.CharField()
    source = serializers.ChoiceField(
        choices=Evaluation.Source.choices, help_text="Whose output the threshold applies to."
    )
    current = NumberOut()
    suggested = NumberOut()
    reviewed = serializers.IntegerField()
    confirmed = serializers.IntegerField()
    dismissed = serializers.IntegerField()
    kept_confirmed = serializers.IntegerField(help_text="Confirmed violations the suggested value still flags.")
    dropped_dismissed = serializers.IntegerField(help_text="Dismissed violations it would no longer flag.")
    current_kept_confirmed = serializers.IntegerField()
    current_dropped_dismissed = serializers.IntegerField()


class NotCalibratedOut(serializers.Serializer):
    rule = serializers.CharField()
    reason = serializers.CharField()


class CalibrationOut(serializers.Serializer):
    policy_id = serializers.IntegerField()
    version = serializers.IntegerField()
    reviewed = serializers.IntegerField()
    confirmed = serializers.IntegerField()
    dismissed = serializers.IntegerField()
    blocks = PrecisionOut()
    warnings = PrecisionOut()
    minimum_reviewed = serializers.IntegerField()
    thresholds = ThresholdOut(many=True)
    not_calibrated = NotCalibratedOut(
        many=True, help_text="Numeric rules the policy sets that get no suggestion, and why."
    )
    message = serializers.CharField(allow_null=True, help_text="Why there is no suggestion (too few reviews).")


class CalibrationView(TenantAPIView):
    required_scope = KeyScope.READ
    reads_replica = True  # core.routing: every reviewed violation of the policy

    @extend_schema(
        responses={200: CalibrationOut},
        description="Confirmed and dismissed violations of the policy, the precision of its blocks "
        "and warnings, and per numeric threshold the value reviewers' verdicts support "
        "(none below 10 reviewed violations).",
    )
    def get(self, request, pk: int):
        return Response(represented(CalibrationOut, policy_calibration(policy=policy_for(self.tenant, pk))))
