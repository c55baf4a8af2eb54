"""Writes for runs: start, record grounding, record spans, complete.

Each call loads the tenant's applicable policies (cached), runs the pure engine for its phase,
and writes the report, the decision and every evaluation in one transaction, through the ORM;
how engine results become rows is governance/rows.py. Judge work that only adds warnings is
queued on commit (governance.judging).
"""

import secrets
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.errors import Conflict, InvalidInput
from judges.services import Evidence
from policies.engine import Decision as EngineDecision
from policies.engine import RunState, combine, evaluate_phase
from policies.scope import applicable_policies
from policies.selectors import policy_specs_for
from tenants.models import ApiKey, Tenant

from . import accumulated, judging, report_write, retrieval, rows, score_audit, score_sampling
from .access import run_for
from .models import Decision, Evaluation, GroundingReport, Run, Span


def _specs(tenant: Tenant, agent_name: str):
    return applicable_policies(policy_specs_for(tenant), agent_name)


def decision_record(*, run: Run, decision: EngineDecision, report: GroundingReport | None = None) -> Decision:
    """Store a phase decision and its evaluations (the mappings are governance/rows.py's)."""
    row = rows.decision_row(run=run, decision=decision, report=report)
    if report_write.in_one_statement():
        # The same rows in one statement (governance/report_write.py).
        evaluations = rows.evaluation_rows(
            run=run, decision=row, evaluations=decision.all_evaluations, created_at=row.created_at
        )
        report_write.store_decision_in_one_statement(decision=row, evaluations=evaluations)
        return row
    row.save(force_insert=True)
    if decision.all_evaluations:  # shadow policies' included: stored and shown, never enforced
        Evaluation.objects.bulk_create(
            rows.evaluation_rows(run=run, decision=row, evaluations=decision.all_evaluations, created_at=row.created_at)
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
    run = Run(
        tenant=tenant,
        api_key=api_key,
        agent_name=agent_name,
        workflow_name=workflow_name or "",
        input=input,
        metadata=metadata or {},
    )
    run.raise_final_action(decision.action)
    if report_write.in_one_statement():
        # The same rows as below, in one statement (governance/report_write.py).
        row = rows.decision_row(run=run, decision=decision)
        report_write.store_start_in_one_statement(
            run=run,
            decision=row,
            evaluations=rows.evaluation_rows(
                run=run, decision=row, evaluations=decision.all_evaluations, created_at=row.created_at
            ),
        )
    else:
        with transaction.atomic():
            run.save()
            decision_record(run=run, decision=decision)
    report_write.remember(run)  # its first report need not read it
    return run, decision


def _citable_sources(
    run: Run, specs, citations, reported: Sequence[dict] = (), retrieved: list[dict] | None = None
) -> list[dict]:
    """The sources a citation check on ``citations`` may need: those the run stored with the cited
    ids, then ``reported`` (a report's own, not stored yet), then the run's retrieval results.
    Nothing is read when no check needs a source."""
    if not retrieval.citations_need_sources(specs, citations):
        return []
    if retrieved is None:
        retrieved = retrieval.retrieved_sources(tenant=run.tenant_id, run_id=run.pk)
    ids = accumulated.cited_ids(citations)
    return [*accumulated.run_sources(run=run, ids=ids), *(s for s in reported if s.get("id") in ids), *retrieved]


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
    owner_key_id: int | None = None,
) -> tuple[Run, EngineDecision]:
    """Record one grounding report and decide mid_execution on it.

    With ``owner_key_id`` (an agent key) a run that key did not start is a 404, checked by the
    run's own read rather than a query of its own (tenants.auth.HasScope).

    mid_execution judges this report's scores and citations; its citations resolve against every
    source the run has reported so far (this report's included) and its retrieval results.
    What after_workflow audits later is read from the reports then (governance/accumulated.py).
    """
    all_specs = policy_specs_for(tenant)
    sources = [dict(source) for source in sources]
    retrieved = None
    if any(retrieval.is_reference(source) for source in sources):
        # Sources named by id alone take their text from what the run retrieved (docs/retrieval).
        retrieved = retrieval.retrieved_sources(tenant=tenant, run_id=run_id)
        sources = retrieval.resolve_references(sources, retrieved)
    judged: list = []
    if judging.needs_inline(all_specs, "mid_execution"):
        # Judges the agent must wait for run before the transaction: no row lock during a provider call.
        agent_name = run_for(tenant, run_id, owner_key_id=owner_key_id).agent_name
        evidence = Evidence(output=output or "", citations=tuple(citations), sources=tuple(sources))
        judged = judging.inline_evaluations(
            tenant=tenant, specs=applicable_policies(all_specs, agent_name), phase="mid_execution", evidence=evidence
        )

    # Read the run, decide, write. On PostgreSQL the first try reads without a lock and writes in
    # one statement that only applies if no other report came in between (governance/
    # report_write.py); if one did, the call is decided again under the run's row lock, which
    # orders concurrent reports (their seq) and keeps a report out of a run that is completing.
    # Before that, a run this process knows is written without being read at all, when the
    # decision reads nothing of it (report_write.known_run). Elsewhere the locked try is the only
    # one. Only the run's columns a report needs are read.
    one_statement = report_write.in_one_statement()
    for attempt in ("known", "read", "locked") if one_statement else ("locked",):
        locked = attempt == "locked"
        with transaction.atomic() if locked else nullcontext():
            if locked:
                run = run_for(tenant, run_id, for_update=True, only=report_write.RUN_FIELDS, owner_key_id=owner_key_id)
            elif attempt == "read":
                run = report_write.read_run(tenant_id=tenant.pk, run_id=run_id, owner_key_id=owner_key_id)
                if run is None:
                    continue  # the locked read answers 404
            else:
                run = report_write.known_run(tenant_id=tenant.pk, run_id=run_id, owner_key_id=owner_key_id)
                if run is None or retrieved is not None or judged:
                    continue
            if run.ended_at is not None:
                raise Conflict(f"Run {run.pk} is already {run.status}; it accepts no more grounding reports.")
            seen_reports = run.report_count  # None for a known run: its count is not read
            specs = applicable_policies(all_specs, run.agent_name)
            if seen_reports is None and retrieval.citations_need_sources(specs, citations):
                continue  # the citations resolve against the run's sources: read it first
            refs, new_sources = rows.source_rows(run=run, sources=sources)
            # The agent's score audit (docs/score-audit.md): a few aggregate rows, read only for a
            # policy that sets max_score_inflation, and reused by the process for a few seconds.
            audit_read = score_audit.inflation_needed(specs)
            inflation, audited = (
                score_audit.agent_inflation_for_decision(
                    tenant_id=run.tenant_id,
                    agent_name=run.agent_name,
                    auditor=score_audit.auditor_for(tenant, specs)[0],
                )
                if audit_read
                else (None, 0)
            )
            report = rows.report_row(
                run=run,
                seq=(seen_reports or 0) + 1,  # the statement numbers it from the run's count
                grounding_scores=grounding_scores,
                citations=citations,
                unsupported_claims=unsupported_claims,
                output_confidence=output_confidence,
                output=output,
                source_refs=refs,
                score_audit=(inflation, audited) if audit_read else None,
            )
            state = RunState(
                grounding_scores=tuple(grounding_scores),
                citations=tuple(citations),
                unsupported_claims=tuple(unsupported_claims),
                output_confidence=output_confidence,
                output=output,
                sources=tuple(_citable_sources(run, specs, citations, sources, retrieved)),
                score_inflation=inflation,
                score_audit_samples=audited,
            )
            decision = evaluate_phase("mid_execution", specs, state)
            if judged:
                decision = combine("mid_execution", (*decision.all_evaluations, *judged))

            decision_row = rows.decision_row(run=run, decision=decision, report=report)
            evaluation_rows = rows.evaluation_rows(
                run=run, decision=decision_row, evaluations=decision.all_evaluations, created_at=decision_row.created_at
            )
            if one_statement:
                written = report_write.store_in_one_statement(
                    run=run,
                    seen_reports=seen_reports,
                    report=report,
                    sources=new_sources,
                    decision=decision_row,
                    evaluations=evaluation_rows,
                )
            else:
                run.report_count = report.seq
                fields = ["report_count", *run.raise_final_action(decision.action), *run.note_report(grounding_scores)]
                fields += run.add_judge_cost(e.metadata for e in evaluation_rows)
                if output:
                    run.output = output
                    fields.append("output")
                report_write.store(
                    run=run,
                    report=report,
                    sources=new_sources,
                    decision=decision_row,
                    evaluations=evaluation_rows,
                    run_fields=fields,
                )
                written = True
            if written:
                report_write.remember(run)
                judging.queue_background(specs=specs, phase="mid_execution", decision_id=decision_row.pk)
                score_sampling.queue_if_sampled(tenant=tenant, specs=specs, report_id=report.pk)
                return run, decision
    raise AssertionError("a report written under the run's lock always applies")


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
    span_id: str | None = None,
    parent_span_id: str | None = None,
) -> Span:
    run = run_for(tenant, run_id)
    if parent_span_id and _names_another_runs_span(tenant, run, parent_span_id):
        raise InvalidInput({"parent_span_id": ["Names a span of another run: a parent must be in the same run."]})
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
        span_id=span_id or secrets.token_hex(8),
        parent_span_id=parent_span_id or None,
    )


def _names_another_runs_span(tenant: Tenant, run: Run, span_id: str) -> bool:
    """Whether `span_id` is recorded in another run of the tenant and not in this one. A span_id
    recorded nowhere yet is allowed (the parent may come later); another tenant's spans are not
    looked at, so whether one exists is never told."""
    runs = set(Span.objects.filter(tenant=tenant, span_id=span_id).values_list("run_id", flat=True)[:20])
    return bool(runs) and run.pk not in runs


FAILED_RUN_REASON = "Run failed; after_workflow audit skipped"


Reported = tuple[accumulated.Accumulated, list[dict]]  # accumulated.run_reported: the sums and the sources


def _after_workflow_evidence(run: Run, reported: Reported) -> Evidence:
    """What the inline judges read at after_workflow: the final output, every citation, the sources as reported."""
    sums, sources = reported
    return Evidence(output=run.output, citations=tuple(sums.citations), sources=tuple(sources))


def _judged_ahead(tenant: Tenant, run_id, output: str | None) -> tuple[tuple, list, Reported | None]:
    """The after_workflow judges the agent waits for (the local verifier, which may escalate to an
    LLM), run before the completing transaction so that no row lock is held meanwhile, as at
    mid_execution. Answers (what they judged: report count, output and policies; their evaluations;
    what the reports added up to, with their sources), or ((), [], None) when no policy asks for
    one or the run has ended (the locked read answers 409)."""
    if not judging.needs_inline(policy_specs_for(tenant), "after_workflow"):
        return (), [], None
    # What the judges need of the run: not its input, result and metadata documents.
    run = run_for(tenant, run_id, only=("id", "tenant_id", "agent_name", "ended_at", "report_count", "output"))
    if run.ended_at is not None:
        return (), [], None
    if output:
        run.output = output
    specs = _specs(tenant, run.agent_name)
    if not judging.needs_inline(specs, "after_workflow"):
        return (), [], None
    reported = accumulated.run_reported(run=run)
    evidence = _after_workflow_evidence(run, reported)
    judged = judging.inline_evaluations(tenant=tenant, specs=specs, phase="after_workflow", evidence=evidence)
    return (run.report_count, run.output, specs), judged, reported


def run_complete(
    *, tenant: Tenant, run_id, result: Any = None, output: str | None = None, error: str | None = None
) -> tuple[Run, EngineDecision]:
    judged_on, judged, reported_ahead = ((), [], None) if error else _judged_ahead(tenant, run_id, output)
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
            # The whole run, read from its reports: every citation and unsupported claim, the
            # latest output_confidence; sources only for the ids a citation check needs. Reports are
            # only ever added, so the judges' read above still holds if none came in since.
            reported = reported_ahead if reported_ahead and judged_on[0] == run.report_count else None
            sums = reported[0] if reported else accumulated.run_accumulated(run=run)
            state = RunState(
                citations=tuple(sums.citations),
                unsupported_claims=tuple(sums.unsupported_claims),
                output_confidence=sums.output_confidence,
                output=run.output or None,
                sources=tuple(_citable_sources(run, specs, sums.citations)),
            )
            decision = evaluate_phase("after_workflow", specs, state)
            if judging.needs_inline(specs, "after_workflow"):
                if judged_on != (run.report_count, run.output, specs):
                    # A report or a policy change came in after the judges ran: judge what is final now.
                    judged = judging.inline_evaluations(
                        tenant=tenant,
                        specs=specs,
                        phase="after_workflow",
                        evidence=_after_workflow_evidence(run, reported or accumulated.run_reported(run=run)),
                    )
                decision = combine("after_workflow", (*decision.all_evaluations, *judged))
        run.raise_final_action(decision.action)
        run.add_judge_cost(e.metadata for e in decision.all_evaluations)
        if error:
            run.status = Run.Status.FAILED
        elif run.final_action == "block":
            run.status = Run.Status.BLOCKED
        else:
            run.status = Run.Status.COMPLETED
        # Only what completing sets: the rest of the row (its input and metadata JSON among it) was
        # written back unchanged, serialised again, on every completion.
        run.save(update_fields=["output", "result", "error", "ended_at", "final_action", "status", "judge_cost"])
        row = decision_record(run=run, decision=decision)
        if state is not None:
            judging.queue_background(specs=specs, phase="after_workflow", decision_id=row.pk)
    return run, decision
