"""The audit log page and the page-side exports (the same streaming exports as the API).

Every member reads the audit log; exporting it, or the evaluations, is for reviewers and admins:
a download leaves the product and its access rules behind, so viewers only read on screen.
"""

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from core.pages import has_filters, parse_cursor, render_page
from governance import exports, selectors
from governance.filters import AuditFilter, EvaluationFilter
from governance.models import Action, Evaluation, Phase, ReviewState
from tenants.models import AuditEvent, Role
from tenants.permissions import require_role


@require_GET
@require_role()
def audit_list(request):
    filterset, page = selectors.audit_list(
        tenant=request.tenant,
        data=request.GET,
        before=parse_cursor(request.GET.get("before")),
        after=parse_cursor(request.GET.get("after")),
    )
    filters = request.GET.copy()
    for key in ("before", "after", "format"):
        filters.pop(key, None)
    context = {
        "filter": filterset,
        "page": page,
        "filtered": has_filters(request.GET),
        "export_query": filters.urlencode(),
        "can_export": request.membership.can_review,
        "phases": Phase.choices,
        "actions": Action.choices,
        "review_states": ReviewState.choices,
    }
    return render_page(request, "audit/list.html", context, fragment="results")


def _export(request, *, filterset_class, model, columns, row, basename):
    fmt = request.GET.get("format", "csv")
    if fmt not in exports.FORMATS:
        return HttpResponse("Unknown format: choose csv or jsonl.", status=400, content_type="text/plain")
    fs = filterset_class(request.GET, queryset=model.objects.filter(tenant=request.tenant))
    if not fs.is_valid():
        problems = "; ".join(f"{field}: {' '.join(errs)}" for field, errs in fs.errors.items())
        return HttpResponse(f"Invalid filters: {problems}", status=400, content_type="text/plain")
    return exports.export_response(
        tenant=request.tenant, queryset=fs.qs, columns=columns, row=row, fmt=fmt, basename=basename
    )


@require_GET
@require_role(Role.REVIEWER)
def audit_export(request):
    return _export(
        request,
        filterset_class=AuditFilter,
        model=AuditEvent,
        columns=exports.AUDIT_COLUMNS,
        row=exports.audit_row,
        basename="audit-log",
    )


@require_GET
@require_role(Role.REVIEWER)
def evaluation_export(request):
    return _export(
        request,
        filterset_class=EvaluationFilter,
        model=Evaluation,
        columns=exports.EVALUATION_COLUMNS,
        row=exports.evaluation_row,
        basename="evaluations",
    )
