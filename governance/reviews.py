"""A reviewer's verdict on a violation: confirmed or dismissed, with a comment, always audited."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from tenants.audit import Actor, audit_record

from .hooks import violation_reviewed
from .models import Evaluation, ReviewState

REVIEW_STATES = (ReviewState.CONFIRMED, ReviewState.DISMISSED)
MAX_COMMENT = 2000


def _review_snapshot(evaluation: Evaluation) -> dict:
    return {
        "review_state": evaluation.review_state,
        "reviewed_by": evaluation.reviewed_by.get_username() if evaluation.reviewed_by_id else None,
        "reviewed_at": evaluation.reviewed_at.isoformat() if evaluation.reviewed_at else None,
        "review_comment": evaluation.review_comment,
    }


def _checked(state: str, comment: str, actor: Actor) -> str:
    if state not in REVIEW_STATES:
        raise ValidationError({"state": "Choose confirmed or dismissed."})
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT:
        raise ValidationError({"comment": f"Keep the comment under {MAX_COMMENT} characters."})
    if actor.user is None:
        raise ValidationError("A review needs a signed-in reviewer.")
    return comment


def _review(locked: Evaluation, *, state: str, comment: str, actor: Actor) -> Evaluation:
    """Write one review on a locked violation, with its audit event (before and after) and its webhook."""
    before = _review_snapshot(locked)
    locked.review_state = state
    locked.review_comment = comment
    locked.reviewed_by = actor.user
    locked.reviewed_at = timezone.now()
    locked.full_clean(
        exclude=[f.name for f in Evaluation._meta.fields if f.name not in ("review_state", "review_comment")]
    )
    locked.save(update_fields=["review_state", "review_comment", "reviewed_by", "reviewed_at"])
    audit_record(
        tenant=locked.tenant,
        action=f"governance.violation.{state}",
        actor=actor,
        object_type="governance.evaluation",
        object_id=locked.pk,
        before=before,
        after={
            **_review_snapshot(locked),
            "run_id": locked.run_id,
            "policy_name": locked.policy_name,
            "action": locked.action,
            "phase": locked.phase,
        },
    )
    violation_reviewed(evaluation=locked)
    return locked


def evaluation_review(*, evaluation: Evaluation, state: str, comment: str = "", actor: Actor) -> Evaluation:
    """Marks a warn or block evaluation confirmed or dismissed. A reviewed one may be reviewed again;
    each review writes its own audit event with the state before and after."""
    comment = _checked(state, comment, actor)
    with transaction.atomic():
        # Locked and re-read, so two reviewers at once each audit the state the other left.
        locked = (
            Evaluation.objects.select_for_update(of=("self",))
            .select_related("tenant", "reviewed_by")
            .get(pk=evaluation.pk, tenant_id=evaluation.tenant_id)
        )
        if not locked.is_violation:
            raise ValidationError("Only warn and block evaluations can be reviewed.")
        return _review(locked, state=state, comment=comment, actor=actor)


MAX_BULK = 500


def evaluations_review_bulk(*, tenant, ids, state: str, comment: str = "", actor: Actor) -> list[Evaluation]:
    """One verdict and comment on many violations of the tenant at once, in one transaction: each row it
    changes gets its own audit event; a row already in that state with that comment is left as it is.
    Returns the rows changed. An id that is not one of the tenant's violations fails the whole call."""
    comment = _checked(state, comment, actor)
    wanted = sorted(set(ids))
    if not wanted:
        raise ValidationError({"ids": "Select at least one violation."})
    if len(wanted) > MAX_BULK:
        raise ValidationError({"ids": f"Select at most {MAX_BULK} violations at once."})
    with transaction.atomic():
        # Locked in id order, so two bulk reviews over overlapping rows cannot deadlock.
        locked = list(
            Evaluation.objects.select_for_update(of=("self",))
            .select_related("tenant", "reviewed_by")
            .filter(tenant=tenant, pk__in=wanted)
            .order_by("id")
        )
        if len(locked) != len(wanted) or not all(e.is_violation for e in locked):
            raise ValidationError({"ids": "Some of the selected rows are not violations of this tenant."})
        return [
            _review(e, state=state, comment=comment, actor=actor)
            for e in locked
            if (e.review_state, e.review_comment) != (state, comment)
        ]
