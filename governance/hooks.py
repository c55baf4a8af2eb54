"""What happens after a decision is returned or a violation reviewed: metrics and webhooks.

Called by the API views (and the review service) rather than from inside the run services, so the
hot path's transaction stays as it is; webhook deliveries still wait for commit (webhooks.services).
"""

from core import metrics
from webhooks import events
from webhooks.services import subscribed_events, webhook_emit

DECISION_EVENTS = {"block": events.DECISION_BLOCK, "warn": events.DECISION_WARN}
REVIEW_EVENTS = {"confirmed": events.REVIEW_CONFIRMED, "dismissed": events.REVIEW_DISMISSED}


def decision_returned(*, tenant, run, decision) -> None:
    metrics.observe_decision(decision, tenant=tenant)
    # Asked on every decision, allow included, so the cached answer is warm before the first block
    # and the hot path stays free of queries.
    wanted = subscribed_events(tenant=tenant)
    event = DECISION_EVENTS.get(decision.action)
    if event not in wanted:
        return
    webhook_emit(
        tenant=tenant,
        event=event,
        data={
            "run_id": run.pk,
            "agent_name": run.agent_name,
            "workflow_name": run.workflow_name,
            "run_status": run.status,
            "phase": decision.phase,
            "action": decision.action,
            "reason": decision.reason,
            "evaluations": [
                {
                    "policy_id": e.policy_id,
                    "policy_name": e.policy_name,
                    "category": e.category,
                    "action": e.action,
                    "reason": e.reason,
                    "source": e.source,
                }
                for e in decision.evaluations
                if e.action in DECISION_EVENTS
            ],
        },
    )


def late_evaluations(*, run, decision_row, evaluations) -> None:
    """A background judge's warn or block joins a stored decision: tell subscribers as for any other."""
    # A shadow policy's verdict is recorded, never acted on: like decision_returned (which sends
    # only decision.evaluations), it announces nothing.
    evaluations = [e for e in evaluations if not e.shadow]
    worst = max((e.action for e in evaluations), key=lambda a: ("allow", "warn", "block").index(a), default="allow")
    event = DECISION_EVENTS.get(worst)
    if event is None or event not in subscribed_events(tenant=run.tenant):
        return
    webhook_emit(
        tenant=run.tenant,
        event=event,
        data={
            "run_id": run.pk,
            "agent_name": run.agent_name,
            "workflow_name": run.workflow_name,
            "run_status": run.status,
            "phase": decision_row.phase,
            "action": worst,
            "late": True,
            "reason": "; ".join(e.reason for e in evaluations if e.action in DECISION_EVENTS),
            "evaluations": [
                {
                    "policy_id": e.policy_id,
                    "policy_name": e.policy_name,
                    "category": e.category,
                    "action": e.action,
                    "reason": e.reason,
                    "source": e.source,
                }
                for e in evaluations
                if e.action in DECISION_EVENTS
            ],
        },
    )


def violation_reviewed(*, evaluation) -> None:
    webhook_emit(
        tenant=evaluation.tenant,
        event=REVIEW_EVENTS[evaluation.review_state],
        data={
            "evaluation_id": evaluation.pk,
            "run_id": evaluation.run_id,
            "agent_name": evaluation.agent_name,
            "policy_name": evaluation.policy_name,
            "phase": evaluation.phase,
            "action": evaluation.action,
            "reason": evaluation.reason,
            "review_state": evaluation.review_state,
            "reviewed_by": evaluation.reviewed_by.get_username() if evaluation.reviewed_by_id else None,
            "review_comment": evaluation.review_comment,
            "reviewed_at": evaluation.reviewed_at.isoformat() if evaluation.reviewed_at else None,
        },
    )
