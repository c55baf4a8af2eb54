"""Runs and violations for the dashboard page tests, made through the real services."""

from datetime import timedelta

from django.test import Client
from django.utils import timezone
from django_scopes import scopes_disabled

from governance import services
from governance.models import Decision, Evaluation, Run

STRICT = {
    "require_source_grounding": True,
    "min_grounding_score": 0.8,
    "min_citations": 2,
    "max_unsupported_claims": 0,
    "abstention_threshold": 0.5,
    "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
    "action_on_violation": "block",
}
LENIENT = {**STRICT, "min_grounding_score": 0.5, "min_citations": 1, "action_on_violation": "warn"}


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def run_through(
    tenant,
    *,
    agent="research-agent",
    workflow="answer-question",
    scores=(0.9, 0.42),
    citations=(),
    claims=(),
    confidence=None,
    output="Paris is the capital of France.",
    sources=(),
    spans=True,
    complete=True,
) -> Run:
    """One agent run: start, a retrieval and an LLM span, one grounding report, complete."""
    with scopes_disabled():
        run, _ = services.run_start(
            tenant=tenant,
            agent_name=agent,
            workflow_name=workflow,
            input={"question": "What is the capital of France?"},
        )
        # Spans carry the agent's own clock; place them in the second before the report arrives.
        t0 = timezone.now() - timedelta(seconds=2)
        Run.objects.filter(pk=run.pk).update(started_at=t0)
        Decision.objects.filter(run=run).update(created_at=t0)
        Evaluation.objects.filter(run=run).update(created_at=t0)
        if spans:
            services.run_record_span(
                tenant=tenant,
                run_id=run.pk,
                kind="retrieval",
                name="source_retrieval",
                input={"query": "capital of France"},
                output={"sources_found": len(sources)},
                started_at=t0,
                ended_at=t0 + timedelta(milliseconds=120),
            )
            services.run_record_span(
                tenant=tenant,
                run_id=run.pk,
                kind="llm",
                name="gpt-4o-mini",
                input={"messages": 2},
                output={"text": output},
                started_at=t0 + timedelta(milliseconds=130),
                ended_at=t0 + timedelta(milliseconds=900),
                attributes={"tokens": {"input": 512, "output": 40}},
            )
        services.run_record_grounding(
            tenant=tenant,
            run_id=run.pk,
            grounding_scores=list(scores),
            citations=list(citations),
            unsupported_claims=list(claims),
            output_confidence=confidence,
            output=output,
            sources=list(sources),
        )
        if complete:
            run, _ = services.run_complete(tenant=tenant, run_id=run.pk, output=output)
        return Run.objects.get(pk=run.pk)


def violations_of(run) -> list[Evaluation]:
    with scopes_disabled():
        return list(Evaluation.objects.filter(run=run, action__in=("warn", "block")).order_by("id"))


def bulk_violations(
    tenant,
    *,
    count: int,
    run=None,
    agent="bulk-agent",
    policy_name="Bulk Policy",
    actions=("warn", "block", "allow"),
    start=None,
) -> list[int]:
    """Many evaluations at once (bulk insert), cycling through `actions`, one second apart; returns their ids."""
    start = start or timezone.now() - timedelta(seconds=count)
    with scopes_disabled():
        if run is None:
            run = Run.objects.create(tenant=tenant, agent_name=agent)
        rows = Evaluation.objects.bulk_create(
            Evaluation(
                tenant=tenant,
                run=run,
                policy_name=policy_name,
                category="grounding",
                agent_name=agent,
                phase="mid_execution",
                action=actions[i % len(actions)],
                reason=f"Bulk reason {i}",
                metadata={"i": i},
                created_at=start + timedelta(seconds=i),
            )
            for i in range(count)
        )
        if rows and rows[0].pk is None:  # backends that do not return ids from bulk inserts
            return list(Evaluation.objects.filter(run=run).order_by("id").values_list("id", flat=True))
        return [r.pk for r in rows]
