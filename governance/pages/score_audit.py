"""The score audit page: every agent's reported and measured means with their sample counts, those
needing attention first, and one agent's chart over days (docs/score-audit.md, "Reading it")."""

from datetime import timedelta

from django import forms
from django.http import Http404
from django.utils import timezone
from django.views.decorators.http import require_GET

from core.pages import render_page
from core.routing import reads_replica
from governance import score_audit
from tenants.permissions import require_role

WINDOW_DAYS = 30
MAX_WINDOW_DAYS = 365


class ScoreAuditQuery(forms.Form):
    days = forms.IntegerField(min_value=1, max_value=MAX_WINDOW_DAYS, required=False)
    agent = forms.CharField(max_length=200, required=False)
    auditor = forms.ChoiceField(choices=[(a, a) for a in score_audit.AUDITORS], required=False)

    def clean_agent(self):
        agent = self.cleaned_data["agent"]
        if "\x00" in agent:
            raise forms.ValidationError("Must not contain a NUL character.")
        return agent


def _chosen(agents: list[dict], agent: str, auditor: str) -> tuple[str, str] | None:
    """The chart's (agent, auditor): as asked, the asked agent's first row's auditor, the first row needing
    attention, or else the row with the most audited reports: with none flagged, the table's order is
    by gap, and the largest gap of a few samples draws a chart of one or two points."""
    if agent:
        rows = [a for a in agents if a["agent_name"] == agent and (not auditor or a["auditor"] == auditor)]
        return agent, auditor or (rows[0]["auditor"] if rows else score_audit.LOCAL)
    flagged = next((a for a in agents if a["needs_attention"]), None)
    audited = [a for a in agents if a["audited_reports"]]
    first = flagged or max(audited, key=lambda a: a["audited_reports"], default=None)  # max keeps the first of ties
    return (first["agent_name"], first["auditor"]) if first else None


def _chart_data(days: list[dict]) -> dict:
    """What static/js/score_audit.js draws: a None is a day without samples, drawn as a gap."""

    def band(key: str, sign: int) -> list[float | None]:
        return [None if d[key] is None else round(min(1.0, max(0.0, d[key] + sign * d["margin"])), 4) for d in days]

    return {
        "labels": [d["date"] for d in days],
        "samples": [d["audited"] for d in days],
        "few_samples": [d["few_samples"] for d in days],
        "reported": [d["reported_mean"] for d in days],
        "measured": [d["measured_mean"] for d in days],
        "reported_low": band("reported_mean", -1),
        "reported_high": band("reported_mean", 1),
        "measured_low": band("measured_mean", -1),
        "measured_high": band("measured_mean", 1),
    }


@reads_replica  # per-agent aggregates over the window (core.routing)
@require_GET
@require_role()
def score_audit_list(request):
    query = ScoreAuditQuery(request.GET)
    context = {
        "rate": request.tenant.score_audit_rate,
        "min_samples": score_audit.MIN_SAMPLES,
        "attention_gap": score_audit.ATTENTION_GAP,
        "max_days": MAX_WINDOW_DAYS,
        "query": query,
    }
    if not query.is_valid():
        return render_page(request, "score_audit/list.html", context, fragment=None, status=400)
    window = query.cleaned_data["days"] or WINDOW_DAYS
    until = timezone.now().date()
    since = until - timedelta(days=window - 1)
    agents = score_audit.agents_summary(tenant=request.tenant, since=since, until=until)
    chosen = _chosen(agents, query.cleaned_data["agent"], query.cleaned_data["auditor"])
    chart = None
    if chosen:
        agent, auditor = chosen
        if not any(a["agent_name"] == agent for a in agents) and not score_audit.agent_known(
            tenant=request.tenant, agent_name=agent
        ):
            raise Http404("No such agent.")
        days = score_audit.every_day(
            score_audit.agent_days(tenant=request.tenant, agent_name=agent, auditor=auditor, since=since, until=until),
            since,
            until,
        )
        chart = {
            "agent": agent,
            "auditor": auditor,
            "days": days,
            "data": _chart_data(days),
            "audited": sum(d["audited"] for d in days),
        }
    context |= {"agents": agents, "chart": chart, "since": since, "until": until, "window": window}
    return render_page(request, "score_audit/list.html", context, fragment=None)
