"""Violations: every warn and block, and a reviewer's page for one of them."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from core.pages import has_filters, parse_cursor, render_page
from governance import selectors
from governance.access import evaluation_for
from governance.models import Action, Phase, ReviewState
from governance.reviews import MAX_COMMENT, evaluation_review
from policies.models import Policy
from tenants.audit import Actor
from tenants.models import Role
from tenants.permissions import require_role, require_role_for_post


class ReviewForm(forms.Form):
    state = forms.ChoiceField(
        choices=[(ReviewState.CONFIRMED, "Confirm"), (ReviewState.DISMISSED, "Dismiss")],
        error_messages={"required": "Choose confirm or dismiss.", "invalid_choice": "Choose confirm or dismiss."},
    )
    comment = forms.CharField(
        required=False,
        max_length=MAX_COMMENT,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Comment",
        help_text="Why you confirm or dismiss it; kept in the audit log.",
    )


@require_http_methods(["GET"])
@require_role()
def violation_list(request):
    filterset, page = selectors.violation_list(
        tenant=request.tenant,
        data=request.GET,
        before=parse_cursor(request.GET.get("before")),
        after=parse_cursor(request.GET.get("after")),
    )
    context = {
        "filter": filterset,
        "page": page,
        "filtered": has_filters(request.GET),
        # The tenant's policies are few; evaluations of deleted ones can still be found by typing the name.
        "policy_names": Policy.objects.filter(tenant=request.tenant).order_by("name").values_list("name", flat=True),
        "phases": Phase.choices,
        "actions": [(Action.WARN, "warn"), (Action.BLOCK, "block")],
        "review_states": ReviewState.choices,
    }
    return render_page(request, "violations/list.html", context, fragment="results")


def _violation(request, pk):
    evaluation = evaluation_for(request.tenant, pk)
    if not evaluation.is_violation:
        raise Http404("Not a violation.")
    return evaluation


@require_http_methods(["GET", "POST"])
@require_role_for_post(Role.REVIEWER)
def violation_detail(request, pk: int):
    evaluation = _violation(request, pk)
    form = ReviewForm()
    status = 200
    if request.method == "POST":
        form = ReviewForm(request.POST)
        reviewed = None
        if form.is_valid():
            try:
                reviewed = evaluation_review(
                    evaluation=evaluation,
                    state=form.cleaned_data["state"],
                    comment=form.cleaned_data["comment"],
                    actor=Actor.from_request(request),
                )
            except ValidationError as exc:
                form.add_error(None, exc)
        if reviewed is not None and not request.htmx:
            messages.success(request, f"Violation {reviewed.pk} {reviewed.review_state}.")
            return redirect("violation_detail", pk=reviewed.pk)
        if request.htmx:
            # Only the review panel changes; htmx swaps 2xx answers only, so errors come back as 200.
            context = {
                "evaluation": reviewed or evaluation,
                "form": ReviewForm() if reviewed else form,
                "just_reviewed": reviewed is not None,
            }
            return render_page(request, "violations/detail.html", context, fragment="review-panel")
        status = 422

    meta = evaluation.metadata if isinstance(evaluation.metadata, dict) else {}
    threshold = meta.get("threshold")
    context = {
        "evaluation": evaluation,
        "form": form,
        "run": evaluation.run,
        "evidence": selectors.violation_evidence(evaluation=evaluation),
        "score_threshold": threshold
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
        else None,
    }
    return render_page(request, "violations/detail.html", context, fragment=None, status=status)
