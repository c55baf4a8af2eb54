"""Where judges plug into the run services.

Judges a policy blocks on at mid_execution run synchronously, before the report's transaction
opens (so no row lock is held during a provider call), within JUDGE_SYNC_BUDGET_SECONDS.
Every other judgement is queued to Celery on commit and appended to the decision when it arrives.
"""

import logging
import time
from dataclasses import asdict

from django.conf import settings
from django.db import transaction

from judges.services import Evidence, judge, kinds_for, runs_inline
from policies.engine import Evaluation

from .tasks import judge_decision

logger = logging.getLogger("groundrule.judges")


def needs_inline(specs, phase: str) -> bool:
    return any(runs_inline(spec, phase, kind) for spec in specs for kind in kinds_for(spec, phase))


def inline_evaluations(*, tenant, specs, phase: str, evidence: Evidence) -> list[Evaluation]:
    deadline = time.monotonic() + settings.JUDGE_SYNC_BUDGET_SECONDS
    return [
        judge(tenant=tenant, spec=spec, phase=phase, kind=kind, evidence=evidence, deadline=deadline)
        for spec in specs
        for kind in kinds_for(spec, phase)
        if runs_inline(spec, phase, kind)
    ]


def _enqueue(decision_id: int, spec: dict, kind: str) -> None:
    try:
        judge_decision.apply_async(
            kwargs={"decision_id": decision_id, "spec": spec, "kind": kind},
            retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
        )
    except Exception:  # the broker is down: the decision stands, the judgement is lost, say so
        logger.exception("could not queue %s judgement for decision %s", kind, decision_id)


def queue_background(*, specs, phase: str, decision_id: int) -> None:
    for spec in specs:
        for kind in kinds_for(spec, phase):
            if not runs_inline(spec, phase, kind):
                spec_data = asdict(spec)
                transaction.on_commit(lambda s=spec_data, k=kind: _enqueue(decision_id, s, k))
