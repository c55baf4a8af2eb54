"""GET /api/v1/runs/{id}/evidence/: the run's evidence pack (governance/evidence_pack.py)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from core.api.base import TenantAPIView
from governance.access import run_for
from governance.evidence_pack import run_evidence_pack
from tenants.api import AuditKeyOut, SignedCheckpointOut
from tenants.models import KeyScope


class EvidencePackOut(serializers.Serializer):
    """The pack as governance.evidence_pack writes it; each list holds that table's rows as JSON objects."""

    format = serializers.CharField(help_text="The pack's format name and version.")
    run = serializers.DictField()
    reports = serializers.ListField(child=serializers.DictField())
    spans = serializers.ListField(child=serializers.DictField())
    decisions = serializers.ListField(child=serializers.DictField())
    evaluations = serializers.ListField(child=serializers.DictField(), help_text="Shadow evaluations included.")
    policy_versions = serializers.ListField(child=serializers.DictField(), help_text="The exact rules used.")
    reviews = serializers.ListField(child=serializers.DictField())
    audit = serializers.ListField(child=serializers.DictField(), help_text="The run's audit rows with their hashes.")
    audit_checkpoint = SignedCheckpointOut(
        allow_null=True,
        help_text="The tenant's audit head signed as the pack was made; null when the deployment signs none.",
    )
    audit_keys = AuditKeyOut(many=True, help_text="The public keys checkpoints are signed with.")


class RunEvidenceView(TenantAPIView):
    required_scope = KeyScope.READ

    @extend_schema(
        responses={200: EvidencePackOut},
        description="One JSON document with the run, its reports, spans, decisions, evaluations "
        "(shadow included), the policy versions used, the reviews and the run's audit rows with "
        "their hashes: what an auditor needs to re-check a decision offline.",
    )
    def get(self, request, pk: int):
        return Response(run_evidence_pack(run=run_for(self.tenant, pk)))
