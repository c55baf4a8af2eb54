"""Policies as code over the API (docs/policies-as-code.md).

POST /api/v1/policies/plan/   what applying a directory of policy files would change, and what the
                              changes would have decided on recent runs; changes nothing (read scope).
POST /api/v1/policies/apply/  the same files, all or nothing (admin scope); 409 when a policy is no
                              longer at the version the plan saw.
GET  /api/v1/schema/policy-file.json  the JSON Schema of one file, for editors (no key needed).
"""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.base import JSONOnlyNegotiation, JSONRenderer, TenantAPIView
from core.api.fields import StrictSerializer
from core.context import current_request_id
from core.errors import InvalidInput
from core.routing import replica_reads
from governance import policy_plan
from policies.api import PolicyIn
from policies.as_code import PLAN_ACTIONS, PlanOutdated, desired_policies, expected_versions_problems, policies_apply
from policies.file_schema import policy_file_schema
from tenants.audit import Actor
from tenants.models import KeyScope

APPLY_KEYS = {"policies", "prune", "expected_versions"}


class PlanIn(StrictSerializer):
    """The body's schema; governance.policy_plan validates it (every file's problems at once)."""

    policies = PolicyIn(many=True, help_text="One object per policy file, as the policy API takes a policy.")
    prune = serializers.BooleanField(required=False, default=False, help_text="Delete the policies no file names.")
    # The limit is read when the schema is built: POLICY_PLAN_MAX_DAYS is a deployment's setting.
    replay_days = serializers.IntegerField(
        required=False,
        default=policy_plan.DEFAULT_DAYS,
        min_value=0,
        max_value=settings.POLICY_PLAN_MAX_DAYS,
        help_text="Days of stored runs to replay; 0: none; at most POLICY_PLAN_MAX_DAYS.",
    )


class ApplyIn(StrictSerializer):
    policies = PolicyIn(many=True)
    prune = serializers.BooleanField(required=False, default=False)
    expected_versions = serializers.DictField(
        child=serializers.IntegerField(allow_null=True, min_value=1, max_value=2**31 - 1),
        required=False,
        help_text="The plan's `expected_versions`: {name: version, or null for none of that name}. "
        "A policy at another version fails the whole apply with 409.",
    )


class DiffOut(serializers.Serializer):
    field = serializers.CharField(help_text="`name`, `mode`, `scope.agents`, `rules.<rule>`, ...")
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    before_default = serializers.BooleanField(required=False, help_text="Not set before: its default.")
    after_default = serializers.BooleanField(required=False, help_text="Not set by the file: its default.")


class ExampleOut(serializers.Serializer):
    run_id = serializers.IntegerField()
    phase = serializers.CharField()
    before = serializers.CharField()
    after = serializers.CharField()
    reason = serializers.CharField()


class ImpactOut(serializers.Serializer):
    decisions = serializers.IntegerField()
    changed_decisions = serializers.IntegerField()
    changed_runs = serializers.IntegerField()
    transitions = serializers.DictField(child=serializers.IntegerField(), help_text='{"warn→block": 3, ...}')
    examples = ExampleOut(many=True)


class PlannedPolicyOut(serializers.Serializer):
    name = serializers.CharField()
    index = serializers.IntegerField(allow_null=True, help_text="The file's position in `policies`; null: a delete.")
    action = serializers.ChoiceField(choices=PLAN_ACTIONS)
    id = serializers.IntegerField(allow_null=True)
    current_version = serializers.IntegerField(allow_null=True)
    managed_by_code = serializers.BooleanField()
    diff = DiffOut(many=True)
    impact = ImpactOut(allow_null=True)


class ReplayFiguresOut(serializers.Serializer):
    days = serializers.IntegerField()
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    sampled = serializers.BooleanField(help_text="The window held more than max_reports: only the latest runs.")
    max_reports = serializers.IntegerField()
    reports_in_window = serializers.IntegerField()
    runs = serializers.IntegerField()
    reports = serializers.IntegerField()
    decisions = serializers.IntegerField()
    judges_reused = serializers.IntegerField()
    judges_missing = serializers.IntegerField()
    elapsed_ms = serializers.IntegerField()


class ChangeCountsOut(serializers.Serializer):
    create = serializers.IntegerField()
    update = serializers.IntegerField()
    delete = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class PlanOut(serializers.Serializer):
    changes = ChangeCountsOut()
    changed = serializers.BooleanField()
    prune = serializers.BooleanField()
    policies = PlannedPolicyOut(many=True)
    impact = ImpactOut(allow_null=True, help_text="All changes together.")
    replay = ReplayFiguresOut(allow_null=True)
    expected_versions = serializers.DictField(child=serializers.IntegerField(allow_null=True))


class AppliedPolicyOut(serializers.Serializer):
    name = serializers.CharField()
    action = serializers.ChoiceField(choices=PLAN_ACTIONS)
    id = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)


class ApplyOut(serializers.Serializer):
    changes = ChangeCountsOut()
    changed = serializers.BooleanField()
    policies = AppliedPolicyOut(many=True)


class PolicyPlanView(TenantAPIView):
    required_scope = KeyScope.READ  # a what-if: it changes nothing

    @extend_schema(request=PlanIn, responses={200: PlanOut})
    def post(self, request):
        with replica_reads(request):  # the stored runs: a heavy read that changes nothing (core.routing)
            return Response(policy_plan.policies_plan(tenant=self.tenant, data=request.data))


class PolicyApplyView(TenantAPIView):
    required_scope = KeyScope.ADMIN

    error_statuses = {"post": (409,)}  # a policy is no longer at the version the plan saw

    @extend_schema(request=ApplyIn, responses={200: ApplyOut})
    def post(self, request):
        data = request.data
        errors = policy_plan.envelope_problems(data, APPLY_KEYS)
        errors.update(expected_versions_problems(data.get("expected_versions")))
        if errors:
            raise InvalidInput(errors)
        desired = desired_policies(tenant=self.tenant, items=data["policies"])
        try:
            changes = policies_apply(
                tenant=self.tenant,
                actor=Actor.from_request(request),
                desired=desired,
                prune=data.get("prune", False),
                expected_versions=data.get("expected_versions"),
            )
        except PlanOutdated as exc:
            body = {"detail": exc.detail, "request_id": current_request_id(), "policies": exc.moved}
            return Response(body, status=status.HTTP_409_CONFLICT)
        return Response(
            {
                "changes": policy_plan.counts(changes),
                "changed": any(change.action != "unchanged" for change in changes),
                "policies": [
                    {
                        "name": change.name,
                        "action": change.action,
                        "id": change.policy.pk if change.action != "delete" and change.policy else None,
                        "version": change.policy.version if change.action != "delete" and change.policy else None,
                    }
                    for change in changes
                ],
            }
        )


class PolicyFileSchemaView(APIView):
    authentication_classes: list = []
    permission_classes: list = []
    content_negotiation_class = JSONOnlyNegotiation
    renderer_classes = [JSONRenderer]

    @extend_schema(exclude=True)
    def get(self, request):
        return Response(policy_file_schema())
