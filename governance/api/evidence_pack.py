"""GET /api/v1/runs/{id}/evidence/: the run's evidence pack (governance/evidence_pack.py)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from core.api.base import TenantAPIView
from governance.access import run_for
from governance.evidence_pack import run_evidence_pack


class RunEvidenceView(TenantAPIView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        description="One JSON document with the run, its reports, spans, decisions, evaluations "
        "(shadow included), the policy versions used, the reviews and the run's audit rows with "
        "their hashes: what an auditor needs to re-check a decision offline.",
    )
    def get(self, request, pk: int):
        return Response(run_evidence_pack(run=run_for(self.tenant, pk)))
