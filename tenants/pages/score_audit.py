"""Settings > Score audit: the share of grounding reports the local verifier re-scores (admins change it)."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render

from tenants import services
from tenants.audit import Actor
from tenants.models import Role
from tenants.permissions import require_role

from .forms import ServiceErrorsMixin


class ScoreAuditRateForm(ServiceErrorsMixin, forms.Form):
    score_audit_rate = forms.FloatField(
        label="Share of grounding reports audited",
        min_value=0.0,
        max_value=1.0,
        help_text="0.0 audits nothing, 1.0 every report that carries an output and sources.",
    )


@require_role(Role.ADMIN)
def score_audit_settings(request):
    form = ScoreAuditRateForm(initial={"score_audit_rate": request.tenant.score_audit_rate})
    if request.method == "POST":
        form = ScoreAuditRateForm(request.POST)
        if form.is_valid():
            try:
                services.tenant_set_score_audit_rate(
                    tenant=request.tenant,
                    rate=form.cleaned_data["score_audit_rate"],
                    actor=Actor.from_request(request),
                )
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                messages.success(request, "Score audit rate saved.")
                return redirect("settings_score_audit")
    return render(request, "settings/score_audit.html", {"form": form}, status=400 if form.errors else 200)
