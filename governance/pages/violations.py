"""Violations: every warn and block, and a reviewer's page for one of them."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from core.pages import has_filters, parse_cursor, render_page
from core.routing import reads_replica
from governance import selectors
from governance.access import evaluation_for
from governance.models import Action, Phase, ReviewState
from governance.reviews import MAX_COMMENT, evaluation_review, evaluations_review_bulk
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


@reads_replica
@require_http_methods(["GET"])
@require_role()
def violation_list(request):
    return _violation_list(request, with_counts=False)


@reads_replica
@require_http_methods(["GET"])
@require_role()
def violation_state_counts(request):
    """The list with its counts per review state: htmx loads only the counts once the list is shown (a
    count over a rare state reads its whole index range, so the list does not wait for it); without
    JavaScript the "Count by review state" link shows the whole list with them."""
    return _violation_list(request, with_counts=True)


def _violation_list(request, *, with_counts: bool):
    filterset, page = selectors.violation_list(
        tenant=request.tenant,
        data=request.GET,
        before=parse_cursor(request.GET.get("before")),
        after=parse_cursor(request.GET.get("after")),
    )
    context = {
        "filter": filterset,
        "page": page,
        "counts": selectors.violation_counts(tenant=request.tenant, data=request.GET) if with_counts else None,
        "next_pending": selectors.next_pending(tenant=request.tenant, data=request.GET),
        "queue_query": _queue_query(request),
        "filtered": has_filters(request.GET),
        # The tenant's policies are few; evaluations of deleted ones can still be found by typing the name.
        "policy_names": Policy.objects.filter(tenant=request.tenant).order_by("name").values_list("name", flat=True),
        "phases": Phase.choices,
        "actions": [(Action.WARN, "warn"), (Action.BLOCK, "block")],
        "review_states": ReviewState.choices,
    }
    return render_page(request, "violations/list.html", context, fragment="counts" if with_counts else "results")


class BulkReviewForm(ReviewForm):
    ids = forms.TypedMultipleChoiceField(
        coerce=int,
        error_messages={
            "required": "Select at least one violation.",
            "invalid_choice": "Select violations from the list.",
        },
    )

    def __init__(self, data, ids):
        super().__init__(data)
        self.fields["ids"].choices = [(i, i) for i in ids]


def _queue_query(request) -> str:
    """The review queue's filters, carried from the list to a violation and on to the next pending one,
    so "next pending" walks the queue the reviewer filtered (docs/triage.md)."""
    query = request.GET.copy()
    for key in selectors.QUEUE_NOT_FILTERS:
        query.pop(key, None)
    return query.urlencode()


def _back_to_list(request) -> str:
    """The list as the reviewer left it (its filters, page), never another site."""
    back = request.POST.get("next", "")
    return back if back.startswith("/violations/") and "//" not in back and "\\" not in back else "/violations/"


@require_http_methods(["POST"])
@require_role(Role.REVIEWER)
def violation_bulk_review(request):
    """One verdict and one comment on the selected rows of the list (a form, so no JavaScript needed)."""
    raw = request.POST.getlist("ids")
    ids = [int(i) for i in raw if i.isascii() and i.isdigit() and 0 < int(i) < 2**63]
    form = BulkReviewForm(request.POST, ids)
    if form.is_valid():
        try:
            changed = evaluations_review_bulk(
                tenant=request.tenant,
                ids=form.cleaned_data["ids"],
                state=form.cleaned_data["state"],
                comment=form.cleaned_data["comment"],
                actor=Actor.from_request(request),
            )
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        else:
            n = len(changed)
            verdict = form.cleaned_data["state"]
            messages.success(request, f"{n} violation{'' if n == 1 else 's'} {verdict}.")
    else:
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
    return redirect(_back_to_list(request))


def _violation(request, pk):
    evaluation = evaluation_for(request.tenant, pk)
    if not evaluation.is_violation:
        raise Http404("Not a violation.")
    return evaluation


@reads_replica
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
            query = _queue_query(request)
            return redirect(reverse("violation_detail", args=[reviewed.pk]) + (f"?{query}" if query else ""))
        if request.htmx:
            # Only the review panel changes; htmx swaps 2xx answers only, so errors come back as 200.
            context = {
                "evaluation": reviewed or evaluation,
                "form": ReviewForm() if reviewed else form,
                "just_reviewed": reviewed is not None,
                "queue_query": _queue_query(request),
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
        "next_pending": selectors.next_pending(tenant=request.tenant, before=evaluation.pk, data=request.GET),
        "queue_query": _queue_query(request),
        "score_threshold": threshold
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
        else None,
    }
    return render_page(request, "violations/detail.html", context, fragment=None, status=status)
