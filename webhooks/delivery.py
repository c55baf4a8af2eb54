"""One delivery attempt: sign, POST through the outbound guard, record what happened.

Retries back off exponentially (BACKOFF_BASE_SECONDS doubling, capped at BACKOFF_MAX_SECONDS) for
RETRY_WINDOW after the event; the attempt cap follows from that schedule, so a worker that runs
retries at once (eager mode) stops too. Any non-2xx answer, a timeout or a connection error is
retried; a URL the guard refuses is not, it will not get better by waiting.
"""

import json
import time
from datetime import timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_scopes import scopes_disabled

from core.outbound import OutboundRefused, guarded_client

from . import payloads, signing
from .models import WebhookDelivery

RETRY_WINDOW = timedelta(hours=24)
BACKOFF_BASE_SECONDS = 30
BACKOFF_MAX_SECONDS = 6 * 3600
TIMEOUT_SECONDS = 10.0
USER_AGENT = "Groundrule-Webhooks/1"


def outbound_allowed() -> list[str]:
    """Hosts a webhook may reach though private: the operator's general outbound allow-list plus
    WEBHOOK_ALLOWED_HOSTS (receivers on the operator's own network)."""
    return [*getattr(settings, "OUTBOUND_ALLOWED_HOSTS", []), *getattr(settings, "WEBHOOK_ALLOWED_HOSTS", [])]


def backoff_seconds(attempts: int) -> int:
    """The wait after the ``attempts``-th failed attempt."""
    return min(BACKOFF_BASE_SECONDS * 2 ** (attempts - 1), BACKOFF_MAX_SECONDS)


def _max_attempts() -> int:
    elapsed, attempts = 0, 1
    while elapsed + backoff_seconds(attempts) <= RETRY_WINDOW.total_seconds():
        elapsed += backoff_seconds(attempts)
        attempts += 1
    return attempts


MAX_ATTEMPTS = _max_attempts()


def body_bytes(delivery: WebhookDelivery) -> bytes:
    return json.dumps(
        payloads.for_url(delivery.webhook.url, delivery.payload), separators=(",", ":"), ensure_ascii=False
    ).encode()


def signed_headers(delivery: WebhookDelivery, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    timestamp = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.EVENT_HEADER: delivery.event,
        signing.DELIVERY_HEADER: str(delivery.delivery_id),
        signing.SIGNATURE_HEADER: signing.signature(delivery.webhook.reveal_secret(), timestamp, body),
    }


def _post(delivery: WebhookDelivery) -> tuple[int | None, str, int]:
    """(response code or None, error text, latency ms)."""
    body = body_bytes(delivery)
    started = time.perf_counter()
    try:
        with guarded_client(timeout=TIMEOUT_SECONDS, allowed=outbound_allowed()) as client:
            response = client.post(delivery.webhook.url, content=body, headers=signed_headers(delivery, body))
        code, error = response.status_code, "" if response.is_success else f"HTTP {response.status_code}"
    except OutboundRefused as exc:
        code, error = None, f"refused: {exc}"
    except httpx.TimeoutException:
        code, error = None, f"timed out after {TIMEOUT_SECONDS:.0f}s"
    except httpx.HTTPError as exc:
        code, error = None, f"{type(exc).__name__}"
    return code, error, int((time.perf_counter() - started) * 1000)


def delivery_attempt(*, delivery_pk: int) -> tuple[str, int]:
    """Attempts one delivery; returns (status, seconds until the next attempt, 0 if none)."""
    with scopes_disabled():
        delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_pk).first()
    if delivery is None or delivery.is_final:
        return ("missing" if delivery is None else delivery.status), 0
    if not delivery.webhook.enabled:
        return _record(delivery, None, "webhook disabled", None, final=True), 0
    code, error, latency = _post(delivery)
    attempts = delivery.attempts + 1
    if not error:
        return _record(delivery, code, "", latency, final=True, success=True), 0
    wait = backoff_seconds(attempts)
    out_of_time = timezone.now() + timedelta(seconds=wait) > delivery.created_at + RETRY_WINDOW
    final = error.startswith("refused:") or attempts >= MAX_ATTEMPTS or out_of_time
    return _record(delivery, code, error, latency, final=final, wait=wait), (0 if final else wait)


def _record(delivery, code, error, latency, *, final: bool, success: bool = False, wait: int = 0) -> str:
    now = timezone.now()
    status = (
        WebhookDelivery.Status.SUCCEEDED
        if success
        else WebhookDelivery.Status.FAILED
        if final
        else WebhookDelivery.Status.RETRYING
    )
    with transaction.atomic(), scopes_disabled():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=status,
            response_code=code,
            last_error=error[:500],
            latency_ms=latency,
            attempts=delivery.attempts + (1 if latency is not None else 0),
            last_attempt_at=now,
            next_attempt_at=None if final or success else now + timedelta(seconds=wait),
        )
    return status
