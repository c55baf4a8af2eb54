"""Which grounding reports the score audit measures (docs/score-audit.md), queued on commit."""

import logging
import random
from collections.abc import Sequence

from django.db import transaction

from policies.engine import PolicySpec
from tenants.models import Tenant

from .tasks import audit_report_scores

logger = logging.getLogger("groundrule.score_audit")


def sample_rate(tenant: Tenant, specs: Sequence[PolicySpec]) -> float:
    """The tenant's rate, unless a grounding policy governing the report sets its own (the highest wins)."""
    overrides = [spec.rules["score_audit_rate"] for spec in specs if spec.rules.get("score_audit_rate") is not None]
    return max(overrides) if overrides else tenant.score_audit_rate


def queue_if_sampled(*, tenant: Tenant, specs: Sequence[PolicySpec], report_id: int) -> bool:
    """Draws the report into the sample at the policy's or tenant's rate; queues its audit on commit."""
    rate = sample_rate(tenant, specs)
    if rate <= 0 or random.random() >= rate:
        return False
    transaction.on_commit(lambda: _enqueue(report_id))
    return True


def _enqueue(report_id: int) -> None:
    try:
        audit_report_scores.apply_async(
            kwargs={"report_id": report_id}, retry=True, retry_policy={"max_retries": 2, "interval_start": 0.2}
        )
    except Exception:  # the broker is down: the report and its decision stand; this sample is skipped
        logger.exception("could not queue the score audit of report %s", report_id)
