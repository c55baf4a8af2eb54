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


class ScoreAuditorForm(ServiceErrorsMixin, forms.Form):
    score_audit_auditor = forms.ChoiceField(
        label="Auditor",
        choices=[("local", "Local verifier"), ("llm", "LLM judge")],
        help_text="Local verifier: private and free, weak on paraphrase. LLM judge: stronger, paid per audited "
        "report (about $0.0002 on gpt-4o-mini), and the report's output and sources go to your provider. Each "
        "auditor's figures are kept apart.",
    )
    score_audit_model = forms.CharField(
        label="LLM judge model",
        max_length=200,
        help_text="Used by the LLM auditor, with your key for its provider: gpt-* (OpenAI), claude-* (Anthropic), "
        "llama-* or mixtral-* (Groq).",
    )


@require_role(Role.ADMIN)
def score_audit_settings(request):
    form = ScoreAuditRateForm(initial={"score_audit_rate": request.tenant.score_audit_rate})
    auditor_form = ScoreAuditorForm(
        initial={
            "score_audit_auditor": request.tenant.score_audit_auditor,
            "score_audit_model": request.tenant.score_audit_model,
        }
    )
    if request.method == "POST" and "score_audit_auditor" in request.POST:
        auditor_form = ScoreAuditorForm(request.POST)
        if auditor_form.is_valid():
            try:
                services.tenant_set_score_auditor(
                    tenant=request.tenant,
                    auditor=auditor_form.cleaned_data["score_audit_auditor"],
                    model=auditor_form.cleaned_data["score_audit_model"],
                    actor=Actor.from_request(request),
                )
            except ValidationError as exc:
                auditor_form.add_service_errors(exc)
            else:
                messages.success(request, "Score auditor saved.")
                return redirect("settings_score_audit")
    elif request.method == "POST":
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
    context = {"form": form, "auditor_form": auditor_form}
    return render(
        request, "settings/score_audit.html", context, status=400 if form.errors or auditor_form.errors else 200
    )
