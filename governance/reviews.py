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


def evaluation_review(*, evaluation: Evaluation, state: str, comment: str = "", actor: Actor) -> Evaluation:
    """Marks a warn or block evaluation confirmed or dismissed. A reviewed one may be reviewed again;
    each review writes its own audit event with the state before and after."""
    if state not in REVIEW_STATES:
        raise ValidationError({"state": "Choose confirmed or dismissed."})
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT:
        raise ValidationError({"comment": f"Keep the comment under {MAX_COMMENT} characters."})
    if actor.user is None:
        raise ValidationError("A review needs a signed-in reviewer.")

    with transaction.atomic():
        # Locked and re-read, so two reviewers at once each audit the state the other left.
        locked = (
            Evaluation.objects.select_for_update(of=("self",))
            .select_related("tenant", "reviewed_by")
            .get(pk=evaluation.pk, tenant_id=evaluation.tenant_id)
        )
        if not locked.is_violation:
            raise ValidationError("Only warn and block evaluations can be reviewed.")
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
