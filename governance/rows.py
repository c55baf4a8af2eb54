"""How what the engine decides and what an agent reports become rows.

Each mapping is written once, here, and every writer uses it: the report path and run_start /
run_complete (governance/services.py), and the late evaluations a background judge appends
(governance/judgements.py). A column added to Evaluation (a policy's shadow flag, say) is added
in `evaluation_rows` and nowhere else. The functions build unsaved instances; the callers save
them through the ORM.
"""

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.utils import timezone

from policies.engine import Decision as EngineDecision
from policies.engine import Evaluation as EngineEvaluation

from .models import SOURCE_HASH, Decision, Evaluation, GroundingReport, Run, RunSource


def decision_row(*, run: Run, decision: EngineDecision, report: GroundingReport | None = None) -> Decision:
    """The row of one phase decision (its evaluations are `evaluation_rows`)."""
    return Decision(
        tenant_id=run.tenant_id,
        run_id=run.pk,
        report=report,
        phase=decision.phase,
        action=decision.action,
        reason=decision.reason,
        abstention_response=decision.abstention_response,
        created_at=timezone.now(),
    )


def evaluation_rows(
    *, run: Run, decision: Decision, evaluations: Sequence[EngineEvaluation], created_at: datetime | None = None
) -> list[Evaluation]:
    """The rows of engine (or judge) evaluations under a stored decision, in the engine's order.

    The policy is kept by id twice: `policy` (a foreign key, nulled if the policy is deleted) and
    `policy_ref` (kept), with its name and version as they were, so an evaluation keeps saying
    what it said.
    """
    created_at = created_at or timezone.now()
    return [
        Evaluation(
            tenant_id=run.tenant_id,
            run_id=run.pk,
            decision=decision,
            policy_id=e.policy_id,
            policy_ref=e.policy_id,
            policy_name=e.policy_name,
            policy_version=e.policy_version,
            category=e.category,
            agent_name=run.agent_name,
            phase=e.phase,
            action=e.action,
            reason=e.reason,
            metadata=e.metadata,
            source=e.source,
            shadow=e.shadow,
            created_at=created_at,
        )
        for e in evaluations
    ]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def source_rows(*, run: Run, sources: Iterable[dict]) -> tuple[list[dict], list[RunSource]]:
    """A report's sources as (references for the report, RunSource rows for the run).

    A reference is the source as reported with its text replaced by the text's hash; the rows are
    one per distinct (id, text) and are inserted ignoring those the run already has.
    """
    refs, new, seen = [], [], set()
    for source in sources:
        ident, text = str(source.get("id", "")), source.get("text") or ""
        digest = content_hash(text)
        refs.append({"id": ident, SOURCE_HASH: digest, **{k: v for k, v in source.items() if k not in ("id", "text")}})
        if (ident, digest) not in seen:
            seen.add((ident, digest))
            new.append(
                RunSource(tenant_id=run.tenant_id, run_id=run.pk, source_id=ident, content_hash=digest, text=text)
            )
    return refs, new


def report_row(
    *,
    run: Run,
    seq: int,
    grounding_scores: Sequence[float],
    citations: Sequence,
    unsupported_claims: Sequence[str],
    output_confidence: float | None,
    output: str | None,
    source_refs: list[dict],
    score_audit: tuple[float | None, int] | None = None,
) -> GroundingReport:
    """The row of one grounding report, as the agent sent it (sources as references), with the
    score audit the engine read for it when one was read (replay and calibration need it)."""
    return GroundingReport(
        tenant_id=run.tenant_id,
        run_id=run.pk,
        seq=seq,
        grounding_scores=list(grounding_scores),
        citations=list(citations),
        unsupported_claims=list(unsupported_claims),
        output_confidence=output_confidence,
        output=output or "",
        source_refs=source_refs,
        # (inflation, samples) when the engine read the agent's score audit for this report.
        score_inflation=None if score_audit is None else {"inflation": score_audit[0], "samples": score_audit[1]},
        created_at=timezone.now(),
    )
