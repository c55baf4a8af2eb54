"""Celery tasks: thin wrappers that load by id and call a service."""

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from core.partitions import MONTHS_AHEAD
from core.partitions import ensure_partitions as partitions_ensure
from outbox.tasks import OutboxTask
from tenants import login_throttle, user_sessions

from .audit_publish import checkpoints_publish
from .judgements import decision_judge
from .replay import replay_job_execute
from .retention import retention_apply
from .score_audit import report_audit


@shared_task(
    bind=True,
    base=OutboxTask,
    # The name it had when it lived in judges.tasks: messages already queued still find it.
    name="judges.tasks.judge_decision",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=2,
    max_retries=3,
    soft_time_limit=int(settings.JUDGE_BACKGROUND_TIMEOUT_SECONDS) + 15,
    time_limit=int(settings.JUDGE_BACKGROUND_TIMEOUT_SECONDS) + 30,
)
def judge_decision(self, *, decision_id: int, spec: dict, kind: str) -> str:
    return decision_judge(decision_id=decision_id, spec=spec, kind=kind)


@shared_task(base=OutboxTask, name="governance.tasks.replay_job", acks_late=True, soft_time_limit=3300, time_limit=3600)
def replay_job(*, job_id: int) -> str:
    return replay_job_execute(job_id=job_id)


@shared_task(
    base=OutboxTask,
    name="governance.audit_report_scores",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=2,
    max_retries=3,
)
def audit_report_scores(*, report_id: int) -> str:
    return report_audit(report_id=report_id)


@shared_task(name="governance.ensure_partitions", acks_late=True)
def ensure_partitions(*, months_ahead: int = MONTHS_AHEAD) -> list[str]:
    """Daily (config/celery.py): the coming months' partitions of the history tables exist."""
    return partitions_ensure(months_ahead=months_ahead)


# Daily from beat (config/celery.py). Long by nature: a first pass over years of history deletes in
# batches until done. Acknowledged on receipt, unlike the other tasks: a pass longer than the
# broker's visibility timeout would otherwise be handed to a second worker, and a lost pass costs
# nothing, since the next day's starts where it stopped.
@shared_task(name="governance.apply_retention", acks_late=False, soft_time_limit=6 * 3600 - 60, time_limit=6 * 3600)
def apply_retention() -> str:
    results = retention_apply()
    cleared = login_throttle.clear_expired()
    sessions = user_sessions.clear_expired()
    return (
        f"retention applied for {len(results)} tenants; {cleared} spent sign-in counts cleared; "
        f"{sessions} expired session rows cleared"
    )


# From beat every AUDIT_CHECKPOINT_INTERVAL_SECONDS (config/settings.py): signed audit heads, published
# outside the database. A lost pass costs nothing: the next one publishes the head as it is then.
@shared_task(name="governance.publish_audit_checkpoints", acks_late=False)
def publish_audit_checkpoints() -> dict[str, int]:
    return checkpoints_publish()
