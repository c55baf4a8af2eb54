from django.db import models
from django.db.models import Q
from django.utils import timezone


class OutboxMessage(models.Model):
    """One piece of queued work, written in the transaction of the change that caused it.

    Not tenant-owned: it is plumbing, read only by the relay and the task that carries it, and it
    holds ids, never content a tenant could see.
    """

    task = models.CharField(max_length=200)  # the Celery task's registered name
    kwargs = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    # When the relay may hand it to the broker again, unless it is done by then.
    relay_after = models.DateTimeField()
    sends = models.PositiveIntegerField(default=0)  # times the relay re-sent it
    # The Celery task id holding it and until when: a re-sent copy waits for an expired lease.
    claimed_by = models.CharField(max_length=64, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)
    # Claims that found the row still held: the holder died mid-run. A task that kills every worker
    # it runs on (memory, a crash) stops after OUTBOX_MAX_CRASHES instead of looping through them.
    crashes = models.PositiveSmallIntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True)
    result = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        indexes = [
            # The relay's question; done rows leave the index, so it stays the size of the backlog.
            models.Index(fields=["relay_after"], name="outbox_pending_idx", condition=Q(done_at__isnull=True)),
        ]
