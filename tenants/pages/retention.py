"""Settings > Retention: how long run data and the audit log are kept (admins change it)."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render

from tenants import services
from tenants.audit import Actor
from tenants.models import MAX_RETENTION_DAYS, Role
from tenants.permissions import require_role

from .forms import ServiceErrorsMixin


def _days_field(label: str, help_text: str) -> forms.IntegerField:
    return forms.IntegerField(
        label=label,
        required=False,
        min_value=1,
        max_value=MAX_RETENTION_DAYS,
        help_text=help_text,
        widget=forms.NumberInput(attrs={"placeholder": "Keep everything", "min": 1, "step": 1}),
    )


class RetentionForm(ServiceErrorsMixin, forms.Form):
    retention_days = _days_field(
        "Keep run data for (days)",
        "Runs with their reports, spans, decisions and evaluations. Empty keeps everything.",
    )
    audit_retention_days = _days_field(
        "Keep the audit log for (days)",
        "Older rows go after a checkpoint is recorded, so the rest still verifies. Empty keeps it forever.",
    )


@require_role(Role.ADMIN)
def retention_settings(request):
    tenant = request.tenant
    form = RetentionForm(
        initial={"retention_days": tenant.retention_days, "audit_retention_days": tenant.audit_retention_days}
    )
    saved = False
    if request.method == "POST":
        form = RetentionForm(request.POST)
        if form.is_valid():
            try:
                services.tenant_set_retention(
                    tenant=tenant,
                    retention_days=form.cleaned_data["retention_days"],
                    audit_retention_days=form.cleaned_data["audit_retention_days"],
                    actor=Actor.from_request(request),
                )
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                if not request.htmx:
                    messages.success(request, "Retention saved.")
                    return redirect("settings_retention")
                saved = True
    template = "settings/retention.html#retention-form" if request.htmx else "settings/retention.html"
    response = render(request, template, {"form": form, "saved": saved}, status=400 if form.errors else 200)
    response["Vary"] = "HX-Request"
    return response
