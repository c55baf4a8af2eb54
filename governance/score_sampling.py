"""Which grounding reports the score audit measures (docs/score-audit.md), queued through the outbox."""

import random
from collections.abc import Sequence

from outbox.services import enqueue
from policies.engine import PolicySpec
from tenants.models import Tenant

from .tasks import audit_report_scores


def sample_rate(tenant: Tenant, specs: Sequence[PolicySpec]) -> float:
    """The tenant's rate, unless a grounding policy governing the report sets its own (the highest wins)."""
    overrides = [spec.rules["score_audit_rate"] for spec in specs if spec.rules.get("score_audit_rate") is not None]
    return max(overrides) if overrides else tenant.score_audit_rate


def queue_if_sampled(*, tenant: Tenant, specs: Sequence[PolicySpec], report_id: int) -> bool:
    """Draws the report into the sample at the policy's or tenant's rate; queues its audit in the
    report's transaction (an outbox row, sent on commit)."""
    rate = sample_rate(tenant, specs)
    if rate <= 0 or random.random() >= rate:
        return False
    enqueue(task=audit_report_scores, kwargs={"report_id": report_id})
    return True
