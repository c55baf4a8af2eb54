"""A run's evidence pack (issue 11 item 6): one JSON document an auditor can re-check offline.

It holds the run, its grounding reports, spans, decisions and every evaluation (shadow ones
included), the exact policy versions that made them (their stored rules), the reviewers'
verdicts, the audit rows about the run and its evaluations with their chain hashes
(tenants/chain.py), and the tenant's audit head signed as the pack was made, with the public keys.
With it, a decision can be replayed through the pure engine (policies/engine.py) and the audit
rows' hashes recomputed, with no access to the server.
A read: a fixed number of queries whatever the run's size.
"""

from datetime import datetime

from django.db.models import Q

from policies.models import PolicyVersion
from tenants.models import AuditEvent
from tenants.signed_checkpoints import SigningUnavailable, checkpoint_sign, public_keys

from .models import Decision, Evaluation, GroundingReport, Run, Span, attach_sources

FORMAT = "groundrule.evidence/1"


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _run(run: Run) -> dict:
    return {
        "id": run.pk,
        "tenant_id": run.tenant_id,
        "agent_name": run.agent_name,
        "workflow_name": run.workflow_name,
        "status": run.status,
        "final_action": run.final_action,
        "started_at": _time(run.started_at),
        "ended_at": _time(run.ended_at),
        "input": run.input,
        "metadata": run.metadata,
        "result": run.result,
        "output": run.output,
        "error": run.error,
        "report_count": run.report_count,
    }


def _report(r: GroundingReport) -> dict:
    return {
        "id": r.pk,
        "seq": r.seq,
        "grounding_scores": r.grounding_scores,
        "citations": r.citations,
        "unsupported_claims": r.unsupported_claims,
        "output_confidence": r.output_confidence,
        "output": r.output,
        "sources": r.sources,
        # The agent's score audit the engine read for this report (max_score_inflation), or null.
        "score_inflation": r.score_inflation,
        "created_at": _time(r.created_at),
    }


def _span(s: Span) -> dict:
    return {
        "id": s.pk,
        "kind": s.kind,
        "name": s.name,
        "input": s.input,
        "output": s.output,
        "started_at": _time(s.started_at),
        "ended_at": _time(s.ended_at),
        "attributes": s.attributes,
        "created_at": _time(s.created_at),
    }


def _decision(d: Decision) -> dict:
    return {
        "id": d.pk,
        "phase": d.phase,
        "report_id": d.report_id,
        "action": d.action,
        "reason": d.reason,
        "abstention_response": d.abstention_response,
        "created_at": _time(d.created_at),
    }


def _evaluation(e: Evaluation) -> dict:
    return {
        "id": e.pk,
        "decision_id": e.decision_id,
        "policy_id": e.policy_ref,
        "policy_name": e.policy_name,
        "policy_version": e.policy_version,
        "category": e.category,
        "phase": e.phase,
        "action": e.action,
        "reason": e.reason,
        "metadata": e.metadata,
        "source": e.source,
        "shadow": e.shadow,
        "created_at": _time(e.created_at),
    }


def _review(e: Evaluation) -> dict:
    return {
        "evaluation_id": e.pk,
        "state": e.review_state,
        "reviewer": e.reviewed_by.get_username() if e.reviewed_by is not None else None,
        "reviewed_at": _time(e.reviewed_at),
        "comment": e.review_comment,
    }


def _policy_version(v: PolicyVersion) -> dict:
    return {
        "policy_id": v.policy_ref,
        "version": v.version,
        "change": v.change,
        "snapshot": v.snapshot,
        "created_at": _time(v.created_at),
        "actor": v.actor_label,
    }


def _audit(a: AuditEvent) -> dict:
    return {
        "id": a.pk,
        "tenant_id": a.tenant_id,
        "seq": a.seq,
        "created_at": _time(a.created_at),
        "action": a.action,
        "actor": a.actor_label,
        "request_id": a.request_id,
        "object_type": a.object_type,
        "object_id": a.object_id,
        "object_repr": a.object_repr,
        "before": a.before,
        "after": a.after,
        "prev_hash": a.prev_hash,
        "hash": a.hash,
    }


def run_evidence_pack(*, run: Run) -> dict:
    # Sources joined for every report at once: each report's own join is a query per report.
    reports = attach_sources(GroundingReport.objects.filter(run=run).order_by("seq"))
    evaluations = list(Evaluation.objects.filter(run=run).select_related("reviewed_by").order_by("id"))
    used = {(e.policy_ref, e.policy_version) for e in evaluations if e.policy_ref is not None}
    versions = []
    if used:
        match = Q()
        for policy_ref, version in used:
            match |= Q(policy_ref=policy_ref, version=version)
        versions = list(PolicyVersion.objects.filter(match, tenant_id=run.tenant_id).order_by("policy_ref", "version"))
    audited = Q(object_type="governance.run", object_id=str(run.pk))
    if evaluations:
        audited |= Q(object_type="governance.evaluation", object_id__in=[str(e.pk) for e in evaluations])
    audit = list(AuditEvent.objects.filter(audited, tenant_id=run.tenant_id).order_by("seq"))
    return {
        "format": FORMAT,
        "run": _run(run),
        "reports": [_report(r) for r in reports],
        "spans": [_span(s) for s in Span.objects.filter(run=run).order_by("id")],
        "decisions": [_decision(d) for d in Decision.objects.filter(run=run).order_by("id")],
        "evaluations": [_evaluation(e) for e in evaluations],
        "policy_versions": [_policy_version(v) for v in versions],
        "reviews": [_review(e) for e in evaluations if e.review_state != "pending"],
        "audit": [_audit(a) for a in audit],
        "audit_checkpoint": _signed_head(run.tenant),
        "audit_keys": public_keys(),
    }


def _signed_head(tenant) -> dict | None:
    """The tenant's audit head signed as the pack is made: the audit rows above lead to it (with
    the rest of the export), and it is a checkpoint the auditor now holds (docs/security.md)."""
    try:
        return checkpoint_sign(tenant=tenant)
    except SigningUnavailable:
        return None
