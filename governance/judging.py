"""Where judges plug into the run services.

Judges a policy blocks on at mid_execution run synchronously, before the report's transaction
opens (so no row lock is held during a provider call), within JUDGE_SYNC_BUDGET_SECONDS.
Every other judgement is queued through the outbox (a row in the report's transaction, sent to
Celery on commit, re-sent by the relay) and appended to the decision when it arrives.
"""

import time
from dataclasses import asdict

from django.conf import settings

from judges.services import Evidence, judge, kinds_for, runs_inline
from outbox.services import enqueue
from policies.engine import Evaluation

from .tasks import judge_decision


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


def queue_background(*, specs, phase: str, decision_id: int) -> None:
    """Called inside the report's transaction: the outbox rows commit (or roll back) with the decision."""
    for spec in specs:
        for kind in kinds_for(spec, phase):
            if not runs_inline(spec, phase, kind):
                enqueue(task=judge_decision, kwargs={"decision_id": decision_id, "spec": asdict(spec), "kind": kind})
