"""Calibration from reviewers (issue 11 item 4), the stored-data part: a policy's reviewed violations
with the state each was decided on, handed to the pure policies/calibration.py. A read."""

from policies.calibration import Reviewed, calibrate
from policies.models import Policy
from policies.replay import ReportRow, RunRow, decision_states

from .models import Action, Evaluation, GroundingReport, ReviewState, Run
from .replay import source_texts, with_sources


def _run_states(tenant_id: int, run_ids: set[int]) -> dict[int, dict]:
    """{run id: {(phase, report index or None): RunState}}, rebuilt from the stored reports."""
    reports: dict[int, list] = {}
    for run_id, *fields in (
        GroundingReport.objects.filter(tenant_id=tenant_id, run_id__in=run_ids)
        .order_by("run_id", "seq")
        .values_list(
            "run_id",
            "grounding_scores",
            "citations",
            "unsupported_claims",
            "output_confidence",
            "output",
            "source_refs",
        )
    ):
        reports.setdefault(run_id, []).append(fields)
    texts = source_texts(list(reports))
    reports = {run_id: [ReportRow(*with_sources(run_id, f, texts)) for f in rows] for run_id, rows in reports.items()}
    states = {}
    for run_id, agent, ended_at, error, output in Run.objects.filter(tenant_id=tenant_id, id__in=run_ids).values_list(
        "id", "agent_name", "ended_at", "error", "output"
    ):
        row = RunRow(run_id, agent, reports.get(run_id, ()), ended_at is not None and not error, output)
        states[run_id] = {(phase, index): state for phase, index, state in decision_states(row)}
    return states


def policy_calibration(*, policy: Policy) -> dict:
    reviewed = list(
        Evaluation.objects.filter(
            tenant_id=policy.tenant_id,
            policy_ref=policy.pk,
            review_state__in=(ReviewState.CONFIRMED, ReviewState.DISMISSED),
            action__in=(Action.WARN, Action.BLOCK),
        ).values_list("run_id", "phase", "action", "source", "metadata", "review_state", "decision__report__seq")
    )
    states = _run_states(policy.tenant_id, {row[0] for row in reviewed if row[3] == "engine"})
    items = []
    for run_id, phase, action, source, metadata, state, seq in reviewed:
        key = (phase, seq - 1 if seq is not None else None)
        score = (metadata or {}).get("score") if source == "llm" else None
        items.append(
            Reviewed(
                confirmed=state == ReviewState.CONFIRMED,
                action=action,
                phase=phase,
                source=source,
                state=states.get(run_id, {}).get(key) if source == "engine" else None,
                score=score if isinstance(score, (int, float)) else None,
            )
        )
    body = calibrate(category_name=policy.category, rules=policy.effective_rules, reviewed=items)
    return {"policy_id": policy.pk, "version": policy.version, **body}
