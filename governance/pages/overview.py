"""The overview: runs by final action and violations over a chosen period, what is violated most, and
for a tenant with no run yet, how to connect its first agent."""

import json
from urllib.parse import urlencode

from django.urls import reverse
from django.views.decorators.http import require_GET

from core.pages import render_page
from core.routing import reads_replica
from governance import selectors
from tenants.pages.connect import connect_context
from tenants.permissions import require_role


@reads_replica
@require_GET
@require_role()
def overview(request):
    period = request.GET.get("period")
    period = period if period in selectors.PERIODS else selectors.DEFAULT_PERIOD
    stats = selectors.overview_stats(tenant=request.tenant, period=period)
    since = stats.since.strftime("%Y-%m-%dT%H:%M")

    def violations_url(**params) -> str:
        return f"{reverse('violation_list')}?{urlencode({**params, 'since': since})}"

    def runs_url(**params) -> str:
        return f"{reverse('run_list')}?{urlencode({**params, 'since': since})}"

    runs_by_action = stats.runs_by_action
    context = {
        "stats": stats,
        "periods": [(key, label) for key, (_, _, label) in selectors.PERIODS.items()],
        # JSON in the canvas's data-series attribute, not a json_script: htmx drops <script> elements
        # from what it swaps in (allowScriptTags is off, for the Content-Security-Policy).
        "chart": {name: json.dumps(data) for name, data in stats.chart_data().items()},
        "run_series": [
            {"action": action, "label": label, "count": runs_by_action[action], "url": runs_url(final_action=action)}
            for action, label in selectors.RUN_SERIES
        ],
        "violations_url": violations_url(),
        "warns_url": violations_url(action="warn"),
        "blocks_url": violations_url(action="block"),
        "runs_url": runs_url(),
        "top_policies": [_with_urls(p, violations_url, policy=p["name"]) for p in stats.top_policies],
        "top_agents": [_with_urls(a, violations_url, agent=a["name"]) for a in stats.top_agents],
    }
    if not stats.has_runs:
        context.update(connect_context(request))
    return render_page(request, "overview.html", context, fragment="dashboard")


def _with_urls(row: dict, violations_url, **params) -> dict:
    """A top-five row with a link for each of its numbers: its warnings, its blocks, and all of them."""
    return {
        **row,
        "url": violations_url(**params),
        "warns_url": violations_url(**params, action="warn"),
        "blocks_url": violations_url(**params, action="block"),
    }
