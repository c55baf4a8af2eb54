"""The policy editor's "Try on past runs": the form's unsaved policy replayed on the last 7 days.

Lives with governance, not with the policy pages, because it reads stored runs (governance/replay.py)
and policies sit below governance. Admin-only, like the editor; the answer is an htmx fragment
shown under the form, with a button that saves the policy straight into shadow mode.
"""

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from core.errors import InvalidInput
from core.routing import reads_replica, replica_reads
from governance import calibration, replay
from policies.access import policy_for
from policies.categories import UnknownCategory, get_category
from policies.pages.forms import PolicyForm
from tenants.models import Role
from tenants.permissions import has_role, require_role


@require_role("admin")
@require_POST
def policy_try(request):
    try:
        category = get_category(request.POST.get("category"))
    except UnknownCategory:
        raise Http404("Unknown category.") from None
    policy = policy_for(request.tenant, request.GET["policy"]) if request.GET.get("policy") else None
    form = PolicyForm(request.POST, category=category, explicit_rules=policy.rules if policy else (), label_suffix="")
    context = {"policy": policy}
    if not form.is_valid():
        context["problem"] = "Fix the fields marked in the form first."
        return render(request, "policies/_replay_result.html", context)
    payload = form.payload()
    data = {"policy": {"category": payload["category"], "rules": payload["rules"], "scope": payload["scope"]}}
    if policy is not None:
        data["policy_id"] = policy.pk
    try:
        plan = replay.replay_request(tenant=request.tenant, data=data)
    except InvalidInput as exc:
        context["problem"] = "Fix the fields marked in the form first: " + "; ".join(_flat(exc.errors))
        return render(request, "policies/_replay_result.html", context)
    with replica_reads(request):  # the stored runs (core.routing); the policies were read from the primary
        total = replay.report_count(tenant_id=request.tenant.pk, plan=plan)
    if total > replay.sync_limit():
        context["problem"] = (
            f"The last 7 days hold {total:,} reports, more than the page replays at once; "
            "use POST /api/v1/policies/replay/, which runs it in the background."
        )
        return render(request, "policies/_replay_result.html", context)
    with replica_reads(request):
        context["result"] = replay.replay_run(tenant_id=request.tenant.pk, plan=plan)
    return render(request, "policies/_replay_result.html", context)


def _flat(errors, prefix: str = "") -> list[str]:
    """{"policy": {"rules": {"min_grounding_score": ["..."]}}} as ["min_grounding_score: ..."]."""
    if isinstance(errors, dict):
        return [
            line
            for key, value in errors.items()
            for line in _flat(value, key if key not in ("policy", "rules") else prefix)
        ]
    return [f"{prefix}: {message}" if prefix else str(message) for message in errors]


@reads_replica  # every reviewed violation of the policy (core.routing)
@require_GET
@require_role()
def policy_calibration(request, pk: int):
    """The calibration panel of the policy page (loaded into it by htmx)."""
    policy = policy_for(request.tenant, pk)
    return render(
        request,
        "policies/_calibration.html",
        {
            "policy": policy,
            "c": calibration.policy_calibration(policy=policy),
            "can_admin": has_role(getattr(request, "membership", None), Role.ADMIN),
        },
    )
