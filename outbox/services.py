"""The transactional outbox: queued work is a row first, a broker message second.

`enqueue` writes the row in the caller's transaction and hands it to Celery after commit. If the
broker refuses (down, unreachable), the row stays pending and `relay` sends it again later; the
task marks it done (`OutboxTask`), so a second copy of a done row does nothing. Dispatch is by
the task's registered name: this app imports no app above it.

A row's life: pending (relay_after set) -> claimed by one task id for a lease as long as the task's
hard time limit -> done. A worker killed mid-task leaves the lease to expire; the relay then sends
a new copy, which another worker claims.
"""

import json
import logging
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, F, Min, PositiveSmallIntegerField, Q, When
from django.utils import timezone

from .models import OutboxMessage

logger = logging.getLogger("groundrule.outbox")

# The keyword the outbox adds to a task's kwargs; OutboxTask takes it off before the task runs.
MESSAGE_KWARG = "outbox_id"


def enqueue(*, task, kwargs: dict) -> OutboxMessage:
    """Queues `task` (a Celery task or its name) with `kwargs` once the current transaction commits."""
    name = task if isinstance(task, str) else task.name
    now = timezone.now()
    message = OutboxMessage.objects.create(
        task=name,
        kwargs=kwargs,
        created_at=now,
        relay_after=now + timedelta(seconds=settings.OUTBOX_RELAY_AFTER_SECONDS),
    )
    transaction.on_commit(lambda: dispatch(message))
    return message


def dispatch(message: OutboxMessage) -> bool:
    """Hands one row to the broker. False when the broker refused: the row waits for the relay."""
    kwargs = {**message.kwargs, MESSAGE_KWARG: message.pk}
    try:
        task = current_app.tasks.get(message.task)
        if task is not None:  # registered here: honours eager mode (no broker configured)
            task.apply_async(kwargs=kwargs, retry=False)
        else:
            current_app.send_task(message.task, kwargs=kwargs, retry=False)
    except Exception as exc:  # the broker is down: the row stands, and the next relay sends it
        logger.warning(
            "outbox: could not send %s #%s (%s); the relay will",
            message.task,
            message.pk,
            type(exc).__name__,
            exc_info=True,
        )
        OutboxMessage.objects.filter(pk=message.pk, done_at__isnull=True).update(relay_after=timezone.now())
        return False
    return True


def relay(*, limit: int = 500) -> tuple[int, int]:
    """Re-sends pending rows whose time has come; returns (sent, refused by the broker).

    Each row's next turn is pushed back before it is sent, so two relays do not send it twice in a
    row; a row the broker refuses is due again at the next pass. Done rows older than
    OUTBOX_KEEP_DONE_SECONDS are deleted here too.
    """
    now = timezone.now()
    with transaction.atomic():
        due = list(
            OutboxMessage.objects.select_for_update(skip_locked=True)
            .filter(done_at__isnull=True, relay_after__lte=now)
            .exclude(_given_up())
            .order_by("relay_after")[:limit]
        )
        OutboxMessage.objects.filter(pk__in=[m.pk for m in due]).update(
            relay_after=now + timedelta(seconds=settings.OUTBOX_RELAY_AFTER_SECONDS)
        )
    sent = [message.pk for message in due if dispatch(message)]
    # Only sends the broker took count towards OUTBOX_MAX_SENDS: an outage, however long, gives up nothing.
    OutboxMessage.objects.filter(pk__in=sent).update(sends=F("sends") + 1)
    refused = len(due) - len(sent)
    OutboxMessage.objects.filter(done_at__lt=now - timedelta(seconds=settings.OUTBOX_KEEP_DONE_SECONDS)).delete()
    if due:
        logger.info("outbox: relayed %d, refused %d", len(due) - refused, refused)
    return len(due) - refused, refused


def _given_up() -> Q:
    """Rows the relay no longer sends: taken OUTBOX_MAX_SENDS times, or crashed OUTBOX_MAX_CRASHES workers."""
    return Q(sends__gte=settings.OUTBOX_MAX_SENDS) | Q(crashes__gte=settings.OUTBOX_MAX_CRASHES)


def claim(*, message_id: int, task: str, kwargs: dict, holder: str, lease_seconds: float) -> bool:
    """Takes a row for one task id. False when it is done, gone, another live copy holds it, or it
    is not the work this message carries (a message outliving its database: a restore, a test run);
    the same task id (a message redelivered after its worker died) takes its own lease back."""
    row = OutboxMessage.objects.filter(pk=message_id).values_list("task", "kwargs").first()
    if row is None or row != (task, json.loads(json.dumps(kwargs))):
        return False
    now = timezone.now()
    lease = timedelta(seconds=lease_seconds)
    return (
        OutboxMessage.objects.filter(pk=message_id, done_at__isnull=True, crashes__lt=settings.OUTBOX_MAX_CRASHES)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now) | Q(claimed_by=holder))
        .update(
            claimed_by=holder,
            claimed_until=now + lease,
            relay_after=now + lease + timedelta(seconds=settings.OUTBOX_LEASE_GRACE_SECONDS),
            # Still held (not released, not done): its last holder died.
            crashes=Case(
                When(claimed_until__isnull=False, then=F("crashes") + 1),
                default=F("crashes"),
                output_field=PositiveSmallIntegerField(),
            ),
        )
        == 1
    )


def release(*, message_id: int, retry_at: datetime | None = None) -> None:
    """The task failed or asked to be retried: free the lease; the relay sends it from `retry_at`."""
    after = (retry_at or timezone.now()) + timedelta(seconds=settings.OUTBOX_LEASE_GRACE_SECONDS)
    OutboxMessage.objects.filter(pk=message_id, done_at__isnull=True).update(
        claimed_by="", claimed_until=None, relay_after=after
    )


def mark_done(*, message_id: int, result) -> None:
    OutboxMessage.objects.filter(pk=message_id, done_at__isnull=True).update(
        done_at=timezone.now(), claimed_until=None, result=str(result)[:64]
    )


def outbox_state() -> dict:
    """Pending rows, the age of the oldest, and those the relay gave up on: for /readyz and /metrics.
    One query, on the partial index of pending rows."""
    figures = OutboxMessage.objects.filter(done_at__isnull=True).aggregate(
        pending=Count("id"), oldest=Min("created_at"), stuck=Count("id", filter=_given_up())
    )
    oldest = figures["oldest"]
    return {
        "pending": figures["pending"],
        "oldest_pending_seconds": round((timezone.now() - oldest).total_seconds(), 1) if oldest else 0.0,
        "stuck": figures["stuck"],
    }
