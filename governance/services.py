"""Writes for runs: start, record grounding, record spans, complete.

Each call loads the tenant's applicable policies (cached), runs the pure engine for its phase,
and writes the report, the decision and every evaluation in one transaction. Judge work that
only adds warnings is queued on commit (governance.judging).
"""

from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from core.errors import Conflict
from core.vocabulary import SEVERITY
from judges.services import Evidence
from policies.engine import Decision as EngineDecision
from policies.engine import RunState, combine, evaluate_phase
from policies.scope import applicable_policies
from policies.selectors import policy_specs_for
from tenants.models import ApiKey, Tenant

from . import judging, retrieval, rows, score_audit, score_sampling
from .access import run_for
from .models import Decision, Evaluation, GroundingReport, Run, Span


def _specs(tenant: Tenant, agent_name: str):
    return applicable_policies(policy_specs_for(tenant), agent_name)


def persist_decision(*, run: Run, decision: EngineDecision, report: GroundingReport | None = None) -> Decision:
    # rows.insert_*: the ORM's create/bulk_create cost more than everything else on the hot path.
    row = rows.insert_instance(
        Decision(
            tenant_id=run.tenant_id,
            run_id=run.pk,
            report_id=report.pk if report is not None else None,
            phase=decision.phase,
            action=decision.action,
            reason=decision.reason,
            abstention_response=decision.abstention_response,
            created_at=timezone.now(),
        )
    )
    if decision.evaluations:
        rows.insert_rows(
            Evaluation,
            [
                {
                    "tenant_id": run.tenant_id,
                    "run_id": run.pk,
                    "decision_id": row.pk,
                    "policy_id": e.policy_id,
                    "policy_ref": e.policy_id,
                    "policy_name": e.policy_name,
                    "policy_version": e.policy_version,
                    "category": e.category,
                    "agent_name": run.agent_name,
                    "phase": e.phase,
                    "action": e.action,
                    "reason": e.reason,
                    "metadata": e.metadata,
                    "source": e.source,
                    "created_at": row.created_at,
                }
                for e in decision.evaluations
            ],
        )
    return row


def run_start(
    *,
    tenant: Tenant,
    api_key: ApiKey | None = None,
    agent_name: str,
    workflow_name: str = "",
    input: Any = None,
    metadata: dict | None = None,
) -> tuple[Run, EngineDecision]:
    specs = _specs(tenant, agent_name)
    decision = evaluate_phase("before_workflow", specs, RunState())
    with transaction.atomic():
        run = Run(
            tenant=tenant,
            api_key=api_key,
            agent_name=agent_name,
            workflow_name=workflow_name or "",
            input=input,
            metadata=metadata or {},
        )
        run.raise_final_action(decision.action)
        run.save()
        persist_decision(run=run, decision=decision)
    return run, decision


def _state(
    run: Run,
    *,
    scores: Sequence[float] = (),
    output: str | None = None,
    citations: Sequence | None = None,
    retrieved: Sequence[dict] = (),
    score_audit: tuple[float | None, int] = (None, 0),
) -> RunState:
    """The engine's view of the run. ``citations`` defaults to all of the run's; ``retrieved``
    adds retrieval results as sources citations may resolve to."""
    return RunState(
        grounding_scores=tuple(scores),
        citations=tuple(run.citations if citations is None else citations),
        unsupported_claims=tuple(run.unsupported_claims),
        output_confidence=run.output_confidence,
        output=output,
        sources=(*run.sources, *retrieved),
        score_inflation=score_audit[0],
        score_audit_samples=score_audit[1],
    )


def _retrieved_for(run: Run, specs, citations, loaded: list[dict] | None = None) -> list[dict]:
    if not retrieval.citations_need_retrieval(specs, citations):
        return []
    if loaded is not None:
        return loaded
    return retrieval.retrieved_sources(tenant=run.tenant_id, run_id=run.pk)


def run_record_grounding(
    *,
    tenant: Tenant,
    run_id,
    grounding_scores: Sequence[float] = (),
    citations: Sequence = (),
    unsupported_claims: Sequence[str] = (),
    output_confidence: float | None = None,
    output: str | None = None,
    sources: Sequence[dict] = (),
) -> tuple[Run, EngineDecision]:

    all_specs = policy_specs_for(tenant)
    sources = [dict(source) for source in sources]
    retrieved = None
    if any(retrieval.is_reference(source) for source in sources):
        # Sources named by id alone take their text from what the run retrieved (seed 004).
        retrieved = retrieval.retrieved_sources(tenant=tenant, run_id=run_id)
        sources = retrieval.resolve_references(sources, retrieved)
    judged: list = []
    if judging.needs_inline(all_specs, "mid_execution"):
        # Judges the agent must wait for run before the transaction: no row lock during a provider call.
        agent_name = run_for(tenant, run_id).agent_name
        evidence = Evidence(output=output or "", citations=tuple(citations), sources=tuple(sources))
        judged = judging.inline_evaluations(
            tenant=tenant, specs=applicable_policies(all_specs, agent_name), phase="mid_execution", evidence=evidence
        )
    if connection.vendor == "postgresql":
        done = _record_grounding_in_one_statement(
            tenant=tenant,
            run_id=run_id,
            all_specs=all_specs,
            grounding_scores=grounding_scores,
            citations=citations,
            unsupported_claims=unsupported_claims,
            output_confidence=output_confidence,
            output=output,
            sources=sources,
            retrieved=retrieved,
            judged=judged,
        )
        if done is not None:
            return done
    # SQLite, and on PostgreSQL a run that is missing, ended or was just changed by another call:
    # read, decide and write under the row lock (also what answers 404 and 409).
    with transaction.atomic():
        run = rows.lock_run(tenant=tenant, run_id=run_id) or run_for(tenant, run_id, for_update=True)
        if run.ended_at is not None:
            raise Conflict(f"Run {run.pk} is already {run.status}; it accepts no more grounding reports.")
        run.report_count += 1
        report = rows.insert_instance(
            GroundingReport(
                tenant_id=run.tenant_id,
                run_id=run.pk,
                seq=run.report_count,
                grounding_scores=list(grounding_scores),
                citations=list(citations),
                unsupported_claims=list(unsupported_claims),
                output_confidence=output_confidence,
                output=output or "",
                sources=list(sources),
                created_at=timezone.now(),
            )
        )
        run.citations = [*run.citations, *citations]
        _accumulate(run, unsupported_claims=unsupported_claims, sources=sources, output_confidence=output_confidence)
        if output:
            run.output = output
        specs, decision = _decide_report(
            run,
            all_specs,
            grounding_scores=grounding_scores,
            citations=citations,
            output=output,
            retrieved=retrieved,
            judged=judged,
        )
        fields = ["report_count", "citations", "unsupported_claims", "sources", "output_confidence", "output"]
        fields += run.raise_final_action(decision.action)
        rows.update_fields(run, fields)
        row = persist_decision(run=run, decision=decision, report=report)
        judging.queue_background(specs=specs, phase="mid_execution", decision_id=row.pk)
        score_sampling.queue_if_sampled(tenant=tenant, specs=specs, report_id=report.pk)
    return run, decision


def _accumulate(run: Run, *, unsupported_claims, sources, output_confidence) -> None:
    """What a report adds to the run state the engine reads."""
    run.unsupported_claims = [*run.unsupported_claims, *unsupported_claims]
    run.sources = [*run.sources, *sources]
    if output_confidence is not None:
        run.output_confidence = output_confidence


def _decide_report(run: Run, all_specs, *, grounding_scores, citations, output, retrieved, judged):
    """The mid_execution decision on a report, given the run with the report accumulated."""
    specs = applicable_policies(all_specs, run.agent_name)
    # mid_execution judges this report's citations, against every source reported so far.
    state = _state(
        run,
        scores=grounding_scores,
        output=output,
        citations=citations,
        retrieved=_retrieved_for(run, specs, citations, retrieved),
        score_audit=(
            score_audit.agent_inflation(tenant_id=run.tenant_id, agent_name=run.agent_name)
            if score_audit.inflation_needed(specs)
            else (None, 0)
        ),
    )
    decision = evaluate_phase("mid_execution", specs, state)
    if judged:
        decision = combine("mid_execution", (*decision.evaluations, *judged))
    return specs, decision


def _record_grounding_in_one_statement(
    *,
    tenant: Tenant,
    run_id,
    all_specs,
    grounding_scores,
    citations,
    unsupported_claims,
    output_confidence,
    output,
    sources,
    retrieved,
    judged,
) -> tuple[Run, EngineDecision] | None:
    """PostgreSQL: an unlocked read, the engine, then one statement that writes every row only if
    the run is still as read (see governance/rows.py): two statements instead of eight, the same
    rows. None when the locked path must decide instead (missing or ended run, or a concurrent
    report got there first).
    """
    run = rows.grounding_run_state(tenant_id=tenant.pk, run_id=run_id)
    if run is None or run.ended_at is not None:
        return None
    seen_reports = run.report_count
    report_at = timezone.now()
    _accumulate(run, unsupported_claims=unsupported_claims, sources=sources, output_confidence=output_confidence)
    specs, decision = _decide_report(
        run,
        all_specs,
        grounding_scores=grounding_scores,
        citations=citations,
        output=output,
        retrieved=retrieved,
        judged=judged,
    )
    written = rows.write_grounding(
        run=run,
        seen_reports=seen_reports,
        report={
            "grounding_scores": list(grounding_scores),
            "citations": list(citations),
            "unsupported_claims": list(unsupported_claims),
            "sources": sources,
            "output_confidence": output_confidence,
            "output": output or "",
        },
        decision=decision,
        evaluations=[
            {
                "policy_id": e.policy_id,
                "policy_name": e.policy_name,
                "policy_version": e.policy_version,
                "category": e.category,
                "phase": e.phase,
                "action": e.action,
                "reason": e.reason,
                "metadata": e.metadata,
                "source": e.source,
            }
            for e in decision.evaluations
        ],
        severity={str(action): rank for action, rank in SEVERITY.items()},  # the run's action only rises
        report_at=report_at,
        decided_at=timezone.now(),
    )
    if written is None:
        return None
    run.report_count, run.status, run.final_action, decision_id, report_id = written
    judging.queue_background(specs=specs, phase="mid_execution", decision_id=decision_id)
    score_sampling.queue_if_sampled(tenant=tenant, specs=specs, report_id=report_id)
    return run, decision


def run_record_span(
    *,
    tenant: Tenant,
    run_id,
    kind: str,
    name: str,
    input: Any = None,
    output: Any = None,
    started_at=None,
    ended_at=None,
    attributes: dict | None = None,
) -> Span:

    run = run_for(tenant, run_id)
    return Span.objects.create(
        tenant=tenant,
        run=run,
        kind=kind,
        name=name,
        input=input,
        output=output,
        started_at=started_at,
        ended_at=ended_at,
        attributes=attributes or {},
    )


FAILED_RUN_REASON = "Run failed; after_workflow audit skipped"


def run_complete(
    *, tenant: Tenant, run_id, result: Any = None, output: str | None = None, error: str | None = None
) -> tuple[Run, EngineDecision]:

    with transaction.atomic():
        run = run_for(tenant, run_id, for_update=True)
        if run.ended_at is not None:
            raise Conflict(f"Run {run.pk} is already {run.status}; a run completes once.")
        if output:
            run.output = output
        run.result = result
        run.error = error or ""
        run.ended_at = timezone.now()
        specs = _specs(tenant, run.agent_name)
        if error:
            # A crashed agent produced no answer to audit; violations here would only be noise.
            decision = EngineDecision(
                action="allow",
                phase="after_workflow",
                reason=FAILED_RUN_REASON,
                evaluations=(),
                abstention_response=None,
            )
            state = None
        else:
            state = _state(run, output=run.output or None, retrieved=_retrieved_for(run, specs, run.citations))
            decision = evaluate_phase("after_workflow", specs, state)
            if judging.needs_inline(specs, "after_workflow"):
                evidence = Evidence(output=run.output, citations=tuple(run.citations), sources=tuple(run.sources))
                judged = judging.inline_evaluations(
                    tenant=tenant, specs=specs, phase="after_workflow", evidence=evidence
                )
                decision = combine("after_workflow", (*decision.evaluations, *judged))
        run.raise_final_action(decision.action)
        if error:
            run.status = Run.Status.FAILED
        elif run.final_action == "block":
            run.status = Run.Status.BLOCKED
        else:
            run.status = Run.Status.COMPLETED
        run.save()
        row = persist_decision(run=run, decision=decision)
        if state is not None:
            judging.queue_background(specs=specs, phase="after_workflow", decision_id=row.pk)
    return run, decision
