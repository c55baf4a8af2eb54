"""The task side of the outbox: a base class that keys a task's run to its row, and the relay."""

import uuid
from datetime import timedelta

from celery import Task, shared_task
from celery.exceptions import Retry
from django.conf import settings
from django.utils import timezone

from . import services


class OutboxTask(Task):
    """Runs a task at most once per outbox row: claims the row, runs, marks it done.

    A copy that finds its row done or held by a live lease returns without running. Late
    acknowledgement (settings) keeps the message until the run ends, so a worker killed mid-task
    leaves it to the broker and, past the lease, to the relay. The task's own idempotency (rows
    keyed by decision, report or delivery) stays: it covers a lease that ran out mid-run.
    """

    abstract = True
    # The outbox id rides in the kwargs, which the task's own signature does not name: the
    # call-time argument check would refuse it. __call__ takes it off before run().
    typing = False

    def __call__(self, *args, **kwargs):
        message_id = kwargs.pop(services.MESSAGE_KWARG, None)
        if message_id is None:  # called directly, or a message queued before the outbox
            return super().__call__(*args, **kwargs)
        # The tracer has pushed the request (its id, and the kwargs a retry re-sends, outbox id
        # included): run() is called directly so that request stays the current one.
        holder = self.request.id or uuid.uuid4().hex
        lease = (self.time_limit or current_time_limit()) + settings.OUTBOX_LEASE_GRACE_SECONDS
        if not services.claim(message_id=message_id, task=self.name, kwargs=kwargs, holder=holder, lease_seconds=lease):
            return "outbox:skipped"
        try:
            result = self.run(*args, **kwargs)
        except Retry as retry:
            services.release(message_id=message_id, retry_at=_when(retry.when))
            raise
        except BaseException:
            services.release(message_id=message_id)
            raise
        services.mark_done(message_id=message_id, result=result)
        return result


def current_time_limit() -> float:
    return float(settings.CELERY_TASK_TIME_LIMIT or 60)


def _when(when):
    if when is None:
        return None
    if isinstance(when, (int, float)):
        return timezone.now() + timedelta(seconds=when)
    return when


@shared_task(name="outbox.relay", ignore_result=True)
def relay_outbox() -> str:
    sent, refused = services.relay()
    return f"sent {sent}, refused {refused}"
