"""A violation and its evidence."""

from dataclasses import dataclass

from ..accumulated import Accumulated, run_reported
from ..models import Decision, Evaluation, GroundingReport, Phase

OTHER_EVALUATIONS_LIMIT = 200


@dataclass
class Evidence:
    report: GroundingReport | None
    # after_workflow: what the run's reports add up to (citations, claims, latest confidence), and
    # every source they gave; None and [] otherwise.
    accumulated: Accumulated | None
    sources: list[dict]
    other_evaluations: list[Evaluation]
    other_truncated: bool
    rules: dict


def violation_evidence(*, evaluation: Evaluation) -> Evidence:
    """What the evaluation judged: the report of its decision (mid_execution) or the whole run's data."""
    decision = (
        Decision.objects.filter(pk=evaluation.decision_id).select_related("report").first()
        if evaluation.decision_id
        else None
    )
    others = list(
        Evaluation.objects.filter(run_id=evaluation.run_id)
        .exclude(pk=evaluation.pk)
        .defer("metadata")
        .order_by("id")[: OTHER_EVALUATIONS_LIMIT + 1]
    )
    rules = {}
    if evaluation.phase != Phase.BEFORE:
        before = (
            Evaluation.objects.filter(run_id=evaluation.run_id, phase=Phase.BEFORE, policy_name=evaluation.policy_name)
            .only("metadata")
            .first()
        )
        if before and isinstance(before.metadata, dict) and isinstance(before.metadata.get("rules"), dict):
            rules = before.metadata["rules"]
    reported, sources = run_reported(run=evaluation.run) if evaluation.phase == Phase.AFTER else (None, [])
    return Evidence(
        report=decision.report if decision else None,
        accumulated=reported,
        sources=sources,
        other_evaluations=others[:OTHER_EVALUATIONS_LIMIT],
        other_truncated=len(others) > OTHER_EVALUATIONS_LIMIT,
        rules=rules,
    )
