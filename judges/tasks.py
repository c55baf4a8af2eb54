"""Celery tasks: thin wrappers that load by id, enter the tenant scope and call a service."""

import logging

from celery import shared_task
from django.conf import settings
from django.db import OperationalError
from django_scopes import scope, scopes_disabled

from governance.judging import spec_from_dict
from governance.models import Decision, Evaluation
from governance.services import decision_append_evaluations

from .services import LLM, Evidence, judge

logger = logging.getLogger("groundrule.judges")


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=2,
    max_retries=3,
    soft_time_limit=int(settings.JUDGE_BACKGROUND_TIMEOUT_SECONDS) + 15,
    time_limit=int(settings.JUDGE_BACKGROUND_TIMEOUT_SECONDS) + 30,
)
def judge_decision(self, *, decision_id: int, spec: dict, kind: str) -> str:
    """Judge one stored decision for one policy and append the evaluation. Idempotent."""
    with scopes_disabled():
        decision = Decision.objects.select_related("run", "report", "tenant").filter(pk=decision_id).first()
    if decision is None:
        return "missing"
    policy = spec_from_dict(spec)
    source = LLM if kind == LLM else "verifier"
    with scope(tenant=decision.tenant):
        if Evaluation.objects.filter(decision=decision, policy_ref=policy.id, source=source).exists():
            return "duplicate"
        if decision.report is not None:
            report = decision.report
            evidence = Evidence(output=report.output, citations=tuple(report.citations), sources=tuple(report.sources))
        else:
            run = decision.run
            evidence = Evidence(output=run.output, citations=tuple(run.citations), sources=tuple(run.sources))
        evaluation = judge(tenant=decision.tenant, spec=policy, phase=decision.phase, kind=kind, evidence=evidence)
        decision_append_evaluations(decision_row=decision, evaluations=[evaluation])
    return evaluation.action
