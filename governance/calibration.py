"""Calibration from reviewers (issue 11 item 4), the stored-data part: a policy's reviewed violations
with what each was decided on, handed to the pure policies/calibration.py. A read.

What is read per reviewed violation:

- engine: the decision's state rebuilt from the run's stored reports, retrieval results and the
  score audit the report stored (governance/replay.py reads, policies/replay.py rebuild); a report
  stored before reports kept their score audit gets it from the violation's own metadata when the
  inflation check fired;
- LLM judge: ``metadata.score``;
- verifier: ``metadata.verification`` (its claims with their probabilities).
"""

from dataclasses import replace

from policies import judged
from policies.calibration import ENGINE, Reviewed, calibrate
from policies.models import Policy
from policies.replay import ReportRow, RunRow, decision_states

from .models import Action, Evaluation, GroundingReport, ReviewState, Run
from .replay import REPORT_FIELDS, retrieved_by_run, source_texts, with_sources


def _run_states(tenant_id: int, run_ids: set[int]) -> dict[int, dict]:
    """{run id: {(phase, report index or None): RunState}}, rebuilt from the stored reports."""
    reports: dict[int, list] = {}
    for run_id, *fields in (
        GroundingReport.objects.filter(tenant_id=tenant_id, run_id__in=run_ids)
        .order_by("run_id", "seq")
        .values_list("run_id", *REPORT_FIELDS)
    ):
        reports.setdefault(run_id, []).append(fields)
    texts = source_texts(list(reports))
    reports = {run_id: [ReportRow(*with_sources(run_id, f, texts)) for f in rows] for run_id, rows in reports.items()}
    retrieved = retrieved_by_run(tenant_id, list(run_ids))
    states = {}
    for run_id, agent, ended_at, error, output in Run.objects.filter(tenant_id=tenant_id, id__in=run_ids).values_list(
        "id", "agent_name", "ended_at", "error", "output"
    ):
        sources, before = retrieved.get(run_id, ((), None))
        row = RunRow(
            run_id, agent, reports.get(run_id, ()), ended_at is not None and not error, output, sources, before
        )
        states[run_id] = {(phase, index): state for phase, index, state in decision_states(row)}
    return states


def _with_fired_audit(state, metadata: dict):
    """A state without a stored score audit, given the one the violation's metadata recorded."""
    audit = metadata.get("score_audit")
    if state is None or state.score_inflation is not None or not isinstance(audit, dict):
        return state
    return replace(state, score_inflation=audit.get("inflation"), score_audit_samples=audit.get("samples") or 0)


def policy_calibration(*, policy: Policy) -> dict:
    reviewed = list(
        Evaluation.objects.filter(
            tenant_id=policy.tenant_id,
            policy_ref=policy.pk,
            review_state__in=(ReviewState.CONFIRMED, ReviewState.DISMISSED),
            action__in=(Action.WARN, Action.BLOCK),
        ).values_list("run_id", "phase", "action", "source", "metadata", "review_state", "decision__report__seq")
    )
    states = _run_states(policy.tenant_id, {row[0] for row in reviewed if row[3] == ENGINE})
    items = []
    for run_id, phase, action, source, metadata, state, seq in reviewed:
        metadata = metadata if isinstance(metadata, dict) else {}
        key = (phase, seq - 1 if seq is not None else None)
        score = metadata.get("score") if source == judged.LLM else None
        verification = metadata.get("verification") if source == judged.VERIFIER else None
        items.append(
            Reviewed(
                confirmed=state == ReviewState.CONFIRMED,
                action=action,
                phase=phase,
                source=source,
                state=_with_fired_audit(states.get(run_id, {}).get(key), metadata) if source == ENGINE else None,
                score=score if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                verification=verification if isinstance(verification, dict) else None,
            )
        )
    body = calibrate(category_name=policy.category, rules=policy.effective_rules, reviewed=items)
    return {"policy_id": policy.pk, "version": policy.version, **body}
