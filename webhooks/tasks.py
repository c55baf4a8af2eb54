"""Celery: deliver one webhook, re-queued with backoff until it succeeds or runs out of time."""

from celery import shared_task

from outbox.tasks import OutboxTask

from .delivery import delivery_attempt


@shared_task(
    bind=True,
    base=OutboxTask,
    name="webhooks.deliver",
    acks_late=True,
    max_retries=None,
    soft_time_limit=30,
    time_limit=45,
)
def deliver_webhook(self, *, delivery_pk: int) -> str:
    status, wait = delivery_attempt(delivery_pk=delivery_pk)
    if wait:
        raise self.retry(countdown=wait)
    return status
