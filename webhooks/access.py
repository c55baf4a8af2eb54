"""The webhook (or delivery) if it belongs to the tenant, else 404 (tenants/access.py explains why 404)."""

from django.shortcuts import get_object_or_404

from core.lookup import pk_or_404

from .models import Webhook, WebhookDelivery


def webhook_for(tenant, pk) -> Webhook:
    return get_object_or_404(Webhook.objects.filter(tenant=tenant), pk=pk_or_404(pk))


def delivery_for(webhook: Webhook, pk) -> WebhookDelivery:
    return get_object_or_404(
        WebhookDelivery.objects.filter(tenant_id=webhook.tenant_id, webhook=webhook), pk=pk_or_404(pk)
    )
