"""Writes for webhooks: create (the secret is returned once), update, delete, emit, redeliver.

Each change is audited in its own transaction. Deliveries are queued through the outbox: the row
commits with the event's transaction and is sent after it, so a receiver never hears of an event
whose transaction rolled back, and a broker that is down delays a delivery instead of losing it.
"""

import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.allowlist import AllowList, default_port
from core.outbound import OutboundRefused, check_url, literal_ip
from core.soft_cache import soft_delete, soft_get, soft_set
from outbox.services import enqueue
from tenants import crypto
from tenants.audit import Actor, audit_record
from tenants.models import Tenant

from . import payloads
from .delivery import outbound_allowed
from .events import EVENTS
from .models import Webhook, WebhookDelivery
from .tasks import deliver_webhook

SECRET_PREFIX = "whsec_"
MAX_URL_LENGTH = 2000
MAX_DESCRIPTION = 200
MAX_WEBHOOKS_PER_TENANT = 50


def _webhook_host_allowed(host: str, port: int) -> bool:
    allow = AllowList.parse(getattr(settings, "WEBHOOK_ALLOWED_HOSTS", []))
    ip = literal_ip(host)
    return allow.allows_ip(ip, port) if ip is not None else allow.allows_name(host, port)


def validate_url(url) -> str:
    if not isinstance(url, str) or not url.strip():
        raise ValidationError({"url": "This field is required."})
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise ValidationError({"url": f"At most {MAX_URL_LENGTH} characters."})
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or default_port(parts.scheme)
    except ValueError:
        raise ValidationError({"url": "Not a valid URL."}) from None
    if parts.scheme != "https" and not (parts.scheme == "http" and _webhook_host_allowed(host, port)):
        raise ValidationError({"url": "Must be an https:// URL (http:// only for hosts in WEBHOOK_ALLOWED_HOSTS)."})
    try:
        check_url(url, allowed=outbound_allowed())
    except OutboundRefused as exc:
        raise ValidationError({"url": str(exc)}) from None
    return url


def validate_events(events) -> list[str]:
    if not isinstance(events, list) or not events:
        raise ValidationError({"events": f"Choose at least one of: {', '.join(EVENTS)}."})
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise ValidationError({"events": f"Unknown event {unknown[0]!r}; choose from: {', '.join(EVENTS)}."})
    return [e for e in EVENTS if e in events]  # one order, no duplicates


def validate_description(description) -> str:
    if not isinstance(description, str):
        raise ValidationError({"description": "Must be a string."})
    if len(description.strip()) > MAX_DESCRIPTION:
        raise ValidationError({"description": f"At most {MAX_DESCRIPTION} characters."})
    return description.strip()


def _snapshot(webhook: Webhook) -> dict:
    return {
        "url": webhook.url,
        "events": list(webhook.events),
        "enabled": webhook.enabled,
        "description": webhook.description,
    }


@transaction.atomic
def webhook_create(
    *, tenant: Tenant, url: str, events: list[str], enabled: bool = True, description: str = "", actor: Actor
) -> tuple[Webhook, str]:
    """Returns the webhook and its signing secret: shown to the caller once, stored only encrypted."""
    url, events, description = validate_url(url), validate_events(events), validate_description(description)
    if Webhook.objects.with_scopes_disabled().filter(tenant=tenant).count() >= MAX_WEBHOOKS_PER_TENANT:
        raise ValidationError({"url": f"A tenant may have at most {MAX_WEBHOOKS_PER_TENANT} webhooks."})
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    webhook = Webhook.objects.create(
        tenant=tenant,
        url=url,
        events=events,
        enabled=bool(enabled),
        description=description,
        secret_ciphertext=crypto.encrypt(secret),
        secret_hint=crypto.mask(secret),
        created_by=actor.user,
    )
    audit_record(tenant=tenant, action="webhooks.webhook.created", actor=actor, obj=webhook, after=_snapshot(webhook))
    _forget_subscriptions(tenant.pk)
    return webhook, secret


UPDATABLE = ("url", "events", "enabled", "description")


@transaction.atomic
def webhook_update(*, webhook: Webhook, actor: Actor, **changes) -> Webhook:
    unknown = set(changes) - set(UPDATABLE)
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "Unknown field."})
    before = _snapshot(webhook)
    if "url" in changes:
        webhook.url = validate_url(changes["url"])
    if "events" in changes:
        webhook.events = validate_events(changes["events"])
    if "description" in changes:
        webhook.description = validate_description(changes["description"])
    if "enabled" in changes:
        webhook.enabled = bool(changes["enabled"])
    webhook.save()
    _forget_subscriptions(webhook.tenant_id)
    if _snapshot(webhook) != before:
        audit_record(
            tenant=webhook.tenant,
            action="webhooks.webhook.updated",
            actor=actor,
            obj=webhook,
            before=before,
            after=_snapshot(webhook),
        )
    return webhook


@transaction.atomic
def webhook_delete(*, webhook: Webhook, actor: Actor) -> None:
    tenant, pk, before = webhook.tenant, webhook.pk, _snapshot(webhook)
    webhook.delete()
    _forget_subscriptions(tenant.pk)
    audit_record(
        tenant=tenant,
        action="webhooks.webhook.deleted",
        actor=actor,
        object_type="webhooks.webhook",
        object_id=pk,
        before=before,
    )


def _new_delivery(*, webhook: Webhook, event: str, data: dict, redelivery_of: WebhookDelivery | None = None):
    delivery = WebhookDelivery(
        tenant_id=webhook.tenant_id, webhook=webhook, event=event, payload={}, redelivery_of=redelivery_of
    )
    delivery.payload = payloads.envelope(
        delivery_id=str(delivery.delivery_id),
        event=event,
        tenant_slug=webhook.tenant.slug,
        created_at=timezone.now().isoformat(),
        data=data,
    )
    delivery.save()
    enqueue(task=deliver_webhook, kwargs={"delivery_pk": delivery.pk})
    return delivery


SUBSCRIPTIONS_TTL_SECONDS = 30


def _subscriptions_key(tenant_id: int) -> str:
    return f"groundrule:webhooks:{tenant_id}"


def _forget_subscriptions(tenant_id: int) -> None:
    # After commit: another request must not re-cache the state this transaction is replacing.
    transaction.on_commit(lambda: soft_delete(_subscriptions_key(tenant_id), use="webhook subscriptions"))
    soft_delete(_subscriptions_key(tenant_id), use="webhook subscriptions")


def _subscriptions(tenant_id: int) -> list[tuple[int, list[str]]]:
    """(webhook id, events) of the tenant's enabled webhooks, cached: every warn and block asks, and
    most tenants have none, so the hot path costs no query. Changes clear this process's copy (and
    every process's, with a shared cache); a per-process cache catches up within the TTL."""
    key = _subscriptions_key(tenant_id)
    found = soft_get(key, None, use="webhook subscriptions")  # the cache down: read the table
    if found is None:
        found = list(
            Webhook.objects.with_scopes_disabled().filter(tenant_id=tenant_id, enabled=True).values_list("pk", "events")
        )
        soft_set(key, found, SUBSCRIPTIONS_TTL_SECONDS, use="webhook subscriptions")
    return found


def subscribed_events(*, tenant: Tenant) -> set[str]:
    """The events some enabled webhook of the tenant wants (cached, see _subscriptions)."""
    return {event for _, events in _subscriptions(tenant.pk) for event in events}


def webhook_emit(*, tenant: Tenant, event: str, data: dict) -> list[WebhookDelivery]:
    """Queues ``event`` to every enabled webhook of the tenant that subscribes to it."""
    if event not in EVENTS:
        raise ValueError(f"unknown webhook event {event!r}")
    wanted = [pk for pk, events in _subscriptions(tenant.pk) if event in events]
    if not wanted:
        return []
    # Explicitly filtered by tenant: emitters include tasks, outside any request's tenant scope.
    hooks = (
        Webhook.objects.with_scopes_disabled()
        .filter(tenant=tenant, enabled=True, pk__in=wanted)
        .select_related("tenant")
    )
    with transaction.atomic():
        return [_new_delivery(webhook=hook, event=event, data=data) for hook in hooks if event in hook.events]


@transaction.atomic
def delivery_redeliver(*, delivery: WebhookDelivery, actor: Actor) -> WebhookDelivery:
    """Sends a delivery's event again as a new delivery (new id, fresh attempts), linked to the old one."""
    again = _new_delivery(
        webhook=delivery.webhook, event=delivery.event, data=delivery.payload.get("data", {}), redelivery_of=delivery
    )
    audit_record(
        tenant=delivery.webhook.tenant,
        action="webhooks.delivery.redelivered",
        actor=actor,
        object_type="webhooks.webhookdelivery",
        object_id=again.pk,
        after={
            "webhook_id": delivery.webhook_id,
            "event": delivery.event,
            "redelivery_of": str(delivery.delivery_id),
            "delivery_id": str(again.delivery_id),
        },
    )
    return again
