"""Late evaluations: a judge that ran in the background appends its verdict to a stored decision.

`judges` only judges and returns evaluations (a leaf, like the engine); writing them onto the run
is the runs domain's job, here.
"""

from collections.abc import Sequence

from django.db import transaction
from django_scopes import scope, scopes_disabled

from judges.services import LLM, Evidence, judge
from policies.engine import PolicySpec

from . import accumulated, rows
from .hooks import late_evaluations
from .models import Decision, Evaluation, Run


def decision_judge(*, decision_id: int, spec: dict, kind: str) -> str:
    """Judge one stored decision for one policy and append the evaluation. Idempotent."""
    with scopes_disabled():
        decision = Decision.objects.select_related("run", "report", "tenant").filter(pk=decision_id).first()
    if decision is None:
        return "missing"
    policy = PolicySpec.from_dict(spec)
    source = LLM if kind == LLM else "verifier"
    with scope(tenant=decision.tenant):
        if Evaluation.objects.filter(decision=decision, policy_ref=policy.id, source=source).exists():
            return "duplicate"
        if decision.report is not None:
            # A mid_execution decision: the report it judged.
            report = decision.report
            evidence = Evidence(output=report.output, citations=tuple(report.citations), sources=tuple(report.sources))
        else:
            # after_workflow: the whole run, read from its reports.
            run = decision.run
            reported, sources = accumulated.run_reported(run=run)
            evidence = Evidence(output=run.output, citations=tuple(reported.citations), sources=tuple(sources))
        evaluation = judge(tenant=decision.tenant, spec=policy, phase=decision.phase, kind=kind, evidence=evidence)
        if not decision_append_evaluations(
            decision_row=decision, evaluations=[evaluation], once_for=(policy.id, source)
        ):
            return "duplicate"
    return evaluation.action


def decision_append_evaluations(
    *, decision_row: Decision, evaluations: Sequence, once_for: tuple[str, str] | None = None
) -> bool:
    """Adds late evaluations (a background judge) to a stored decision and raises the run's action.

    With `once_for` (policy ref, source), nothing is added when the decision already has that
    evaluation: checked under the run's row lock, so two copies of one judgement that both got past
    the check before judging (a re-sent outbox row, a redelivered message) store it once.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=decision_row.run_id)
        if once_for is not None:
            policy_ref, source = once_for
            if Evaluation.objects.filter(decision=decision_row, policy_ref=policy_ref, source=source).exists():
                return False
        Evaluation.objects.bulk_create(rows.evaluation_rows(run=run, decision=decision_row, evaluations=evaluations))
        fields = run.add_judge_cost(e.metadata for e in evaluations)
        for e in evaluations:
            if not e.shadow:  # a shadow policy's late verdict never moves the run
                fields += run.raise_final_action(e.action)
        if fields:
            run.save(update_fields=sorted(set(fields)))
        late_evaluations(run=run, decision_row=decision_row, evaluations=evaluations)
    return True
