"""The score audit page: agents by how far their reported scores run ahead of what the verifier measures."""

from datetime import timedelta

from django.utils import timezone
from django.views.decorators.http import require_GET

from core.pages import render_page
from core.routing import reads_replica
from governance import score_audit
from tenants.permissions import require_role

WINDOW_DAYS = 30


@reads_replica  # per-agent aggregates over 30 days (core.routing)
@require_GET
@require_role()
def score_audit_list(request):
    until = timezone.now().date()
    since = until - timedelta(days=WINDOW_DAYS - 1)
    agents = score_audit.agents_summary(tenant=request.tenant, since=since, until=until)
    charts = []
    for index, agent in enumerate(a for a in agents if a["audited_reports"]):
        days = score_audit.agent_summary(
            tenant=request.tenant, agent_name=agent["agent_name"], auditor=agent["auditor"], since=since, until=until
        )["by_day"]
        charts.append(
            {
                "agent": agent,
                "days": days,
                "data_id": f"score-audit-chart-{index}",
                "data": {
                    "labels": [d["date"] for d in days],
                    "reported": [d["reported_mean"] for d in days],
                    "measured": [d["measured_mean"] for d in days],
                },
            }
        )
    context = {
        "agents": agents,
        "charts": charts,
        "since": since,
        "until": until,
        "rate": request.tenant.score_audit_rate,
    }
    return render_page(request, "score_audit/list.html", context, fragment=None)
