"""Runs: the list, and a run's Governance and Trace tabs."""

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from core.pages import has_filters, parse_cursor, render_page
from core.routing import reads_replica
from governance import selectors
from governance.access import run_for
from governance.evidence_pack import run_evidence_pack
from governance.models import Action, Run
from tenants.permissions import require_role

TABS = ("governance", "trace")


@reads_replica
@require_GET
@require_role()
def run_list(request):
    filterset, page = selectors.run_list(
        tenant=request.tenant,
        data=request.GET,
        before=parse_cursor(request.GET.get("before")),
        after=parse_cursor(request.GET.get("after")),
    )
    sort, descending = selectors.parse_sort(request.GET.get("sort"))
    context = {
        "filter": filterset,
        "page": page,
        "sorted": sort is not None,
        "columns": _columns(sort, descending),
        "filtered": has_filters(request.GET, ignore=("sort", "cursor")),
        "statuses": Run.Status.choices,
        "actions": Action.choices,
    }
    return render_page(request, "runs/list.html", context, fragment="results")


def _columns(sort, descending) -> dict:
    """Per sortable column: the ?sort= its header link asks for, and its aria-sort state."""
    columns = {}
    for key, column in selectors.SORTS.items():
        if sort is not None and sort.key == key:
            state = "descending" if descending else "ascending"
            ask = key if descending else f"-{key}"
        else:
            state = "none"
            ask = f"-{key}" if column.default_descending else key
        if sort is None and key == "started":
            state, ask = "descending", "started"  # newest first is the default
        columns[key] = {"label": column.label, "sort": ask, "state": state}
    return columns


@reads_replica
@require_GET
@require_role()
def run_detail(request, pk: int):
    run = run_for(request.tenant, pk)
    tab = request.GET.get("tab")
    tab = tab if tab in TABS else "governance"
    context = {"run": run, "tab": tab, "tabs": TABS}
    context["totals"] = selectors.run_totals(run=run)  # the summary: what the reports add up to
    if tab == "governance":
        context["phases"] = selectors.run_governance(run=run)
        context["shadow_violations"] = selectors.run_shadow_violations(run=run)
    else:
        context["trace"] = selectors.run_trace(
            run=run,
            page=max(0, (_number(request.GET.get("spans")) or 0) - 1),
            reports_from=_number(request.GET.get("reports")),
        )
    return render_page(request, "runs/detail.html", context, fragment="tabs")


def _number(value: str | None) -> int | None:
    """?spans=N (the waterfall's page, from 1) or ?reports=N (the report the list starts at): anything
    but a plain number is no number, and the first page."""
    if value is None or not (value.isascii() and value.isdigit()) or len(value) > 9:
        return None
    return int(value)


@require_GET
@require_role()
def run_evidence(request, pk: int):
    """The evidence pack as a download, for members signed in to the dashboard."""
    run = run_for(request.tenant, pk)
    body = json.dumps(run_evidence_pack(run=run), cls=DjangoJSONEncoder, indent=2, ensure_ascii=False)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-evidence.json"'
    response["Cache-Control"] = "no-store"
    return response
