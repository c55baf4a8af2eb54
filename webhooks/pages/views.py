"""Settings > webhooks: the list and a form to add one (its secret shown once), and each webhook's
page with its settings and delivery log, where a delivery can be sent again. Admins only."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from tenants.audit import Actor
from tenants.models import Role
from tenants.permissions import require_role
from webhooks import services
from webhooks.access import delivery_for, webhook_for
from webhooks.models import Webhook, WebhookDelivery

from .forms import WebhookForm

LOG_ROWS = 50


@require_role(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def webhook_list(request):
    new_webhook = secret = None
    form = WebhookForm(request.POST or None, initial={"enabled": True})
    if request.method == "POST" and form.is_valid():
        try:
            new_webhook, secret = services.webhook_create(
                tenant=request.tenant, actor=Actor.from_request(request), **form.cleaned_data
            )
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            form = WebhookForm(initial={"enabled": True})
    # The secret is on this one response only: stored encrypted, never rendered again.
    response = render(
        request,
        "settings/webhooks.html",
        {
            "form": form,
            "webhooks": Webhook.objects.filter(tenant=request.tenant).order_by("-id"),
            "new_webhook": new_webhook,
            "secret": secret,
        },
        status=400 if form.errors else 200,
    )
    add_never_cache_headers(response)
    return response


@require_role(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def webhook_detail(request, pk):
    webhook = webhook_for(request.tenant, pk)
    initial = {
        "url": webhook.url,
        "events": webhook.events,
        "description": webhook.description,
        "enabled": webhook.enabled,
    }
    form = WebhookForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.webhook_update(webhook=webhook, actor=Actor.from_request(request), **form.cleaned_data)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, "Webhook saved.")
            return redirect("settings_webhook", pk=webhook.pk)
    deliveries = WebhookDelivery.objects.filter(tenant=request.tenant, webhook=webhook).order_by("-id")[:LOG_ROWS]
    return render(
        request,
        "settings/webhook_detail.html",
        {"webhook": webhook, "form": form, "deliveries": deliveries},
        status=400 if form.errors else 200,
    )


@require_role(Role.ADMIN)
@require_POST
def webhook_delete(request, pk):
    webhook = webhook_for(request.tenant, pk)
    services.webhook_delete(webhook=webhook, actor=Actor.from_request(request))
    messages.success(request, f"Webhook {webhook.url} deleted.")
    return redirect("settings_webhooks")


@require_role(Role.ADMIN)
@require_POST
def delivery_redeliver(request, pk, delivery_pk):
    delivery = delivery_for(webhook_for(request.tenant, pk), delivery_pk)
    services.delivery_redeliver(delivery=delivery, actor=Actor.from_request(request))
    messages.success(request, f"{delivery.event} queued for delivery again.")
    return redirect("settings_webhook", pk=pk)
