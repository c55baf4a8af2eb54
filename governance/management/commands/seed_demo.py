"""Loads the demo tenant: an admin login, the seed's example policies and sample runs.

Idempotent: a second `make run` finds the tenant and only prints the login again.
"""

import random
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone
from django_scopes import scope

from governance import score_audit
from governance import services as run_services
from governance.models import Decision, Evaluation, GroundingReport, Phase, Run, ScoreAudit, run_duration_ms
from policies import services as policy_services
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role, Tenant

DEMO_SLUG = "demo"
ADMIN_EMAIL = "admin@demo.local"
REVIEWER_EMAIL = "reviewer@demo.local"
PASSWORD = "groundrule-demo"
# The key the demo prints has the agent scope; creating policies, secrets or keys over the API takes an admin key.
ADMIN_KEY_COMMAND = f"python manage.py create_api_key {DEMO_SLUG} --scope admin"
AGENT_KEY_COMMAND = f"python manage.py create_api_key {DEMO_SLUG} --scope agent"

POLICIES = [
    (
        "Strict Research Grounding",
        ["research-*"],
        {
            "require_source_grounding": True,
            "min_grounding_score": 0.8,
            "min_citations": 2,
            "max_unsupported_claims": 0,
            "abstention_threshold": 0.5,
            "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
            "action_on_violation": "block",
        },
    ),
    (
        "Lenient RAG Agent",
        ["support-*"],
        {
            "require_source_grounding": False,
            "min_grounding_score": 0.6,
            "min_citations": 1,
            "max_unsupported_claims": 3,
            "abstention_threshold": None,
            "action_on_violation": "warn",
        },
    ),
    (
        "RAG Pipeline",
        ["rag-*"],
        {
            "min_grounding_score": 0.7,
            "score_relevance_floor": 0.5,
            "score_eval_mode": "all",
            "min_citations": 1,
            "action_on_violation": "block",
        },
    ),
    (
        "Local verifier",
        ["research-*", "support-*"],
        {
            "nli_check": True,
            "nli_phase": "after_workflow",
            "min_citations": 0,
            "min_grounding_score": None,
            "contradiction_action": "warn",
            "unverifiable_action": "warn",
            "max_unverifiable_ratio": 0.5,
        },
    ),
    (
        "Medical Q&A",
        ["medical-*"],
        {
            "require_source_grounding": True,
            "min_grounding_score": 0.9,
            "min_citations": 3,
            "max_unsupported_claims": 0,
            "abstention_threshold": 0.7,
            "abstention_response": "I cannot provide a reliable answer based on available evidence. "
            "Please consult a qualified professional.",
            "action_on_violation": "block",
        },
    ),
]

AGENTS = ["research-agent", "support-bot", "rag-indexer", "medical-assistant"]
# A tiny corpus so the demo's runs carry real sources, retrieval provenance and verifier verdicts.
CORPUS = {
    "fed-report-2023": "The Federal Reserve raised interest rates by 25 basis points in July 2023. "
    "Inflation fell to 3.2 percent in October 2023.",
    "imf-outlook": "The IMF projects global growth of 3.0 percent in 2024. Emerging markets grow faster than "
    "advanced economies.",
    "sec-filing-2023": "The company reported revenue of 4.2 billion dollars in fiscal 2023.",
    "who-guidance": "The World Health Organization recommends 150 minutes of moderate exercise per week.",
    "product-manual-v3": "Premium users get 1,000 requests per minute. Free users get 100 requests per minute.",
}
# (answer, the source it comes from): the good ones are grounded, the bad ones contradict it.
GOOD_ANSWERS = [
    ("The Federal Reserve raised interest rates by 25 basis points in July 2023.", "fed-report-2023"),
    ("Premium users get 1,000 requests per minute.", "product-manual-v3"),
    ("The WHO recommends 150 minutes of moderate exercise per week.", "who-guidance"),
]
BAD_ANSWERS = [
    ("The Federal Reserve raised interest rates by 50 basis points in July 2023.", "fed-report-2023"),
    ("Free users get 1,000 requests per minute.", "product-manual-v3"),
    ("The company reported revenue of 6.1 billion dollars in fiscal 2023.", "sec-filing-2023"),
]


class Command(BaseCommand):
    help = "Create the demo tenant with an admin login, sample policies and sample runs."

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=60)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, runs, seed, **options):
        tenant = Tenant.objects.filter(slug=DEMO_SLUG).first()
        if tenant is not None:
            self.stdout.write(f"Demo tenant already loaded. Sign in as {ADMIN_EMAIL} / {PASSWORD}")
            self.stdout.write(f"Its agent key was shown once when loaded; make another with: {AGENT_KEY_COMMAND}")
            self.stdout.write(f"Make an admin API key (policies, secrets, keys) with: {ADMIN_KEY_COMMAND}")
            return
        actor = Actor.system("command:seed_demo")
        rng = random.Random(seed)
        random.seed(seed)  # which reports the score audit samples (score_sampling draws from the module's generator)
        with transaction.atomic():
            tenant = tenant_services.tenant_create(slug=DEMO_SLUG, name="Demo Research Co", actor=actor)
            # Half its reports audited, not the default tenth: a week of demo runs then gives each agent a
            # line on the score audit chart rather than a point or two.
            tenant_services.tenant_set_score_audit_rate(tenant=tenant, rate=0.5, actor=actor)
            tenant_scope = scope(tenant=tenant)
            tenant_scope.__enter__()
            tenant_services.user_create_admin(tenant=tenant, email=ADMIN_EMAIL, password=PASSWORD, actor=actor)
            reviewer = tenant_services.user_create_admin(
                tenant=tenant, email=REVIEWER_EMAIL, password=PASSWORD, actor=actor
            )
            tenant_services.membership_set(tenant=tenant, user=reviewer, role=Role.REVIEWER, actor=actor)
            for name, agents, rules in POLICIES:
                policy_services.policy_create(
                    tenant=tenant, actor=actor, name=name, category="grounding", rules=rules, scope={"agents": agents}
                )
            _, raw_key = tenant_services.api_key_create(tenant=tenant, name="demo", actor=actor)
            tenant_scope.__exit__(None, None, None)
        tenant.refresh_from_db()
        with scope(tenant=tenant):
            for i in range(runs):
                self._sample_run(tenant, rng, i, runs)
            # The sampled audits were stored today; date each at its report, as a live server would have,
            # so the score audit chart spreads over the week like the runs (docs/score-audit.md).
            for audit in ScoreAudit.objects.filter(tenant=tenant).select_related("report"):
                ScoreAudit.objects.filter(pk=audit.pk).update(created_at=audit.report.created_at)
            score_audit.days_rebuild(tenant=tenant)
        self.stdout.write(self.style.SUCCESS(f"Loaded demo tenant '{tenant.slug}' with {runs} sample runs."))
        self.stdout.write(f"Sign in as {ADMIN_EMAIL} / {PASSWORD} (reviewer: {REVIEWER_EMAIL})")
        self.stdout.write(f"Make an admin API key (policies, secrets, keys) with: {ADMIN_KEY_COMMAND}")
        self.stdout.write(f"Demo API key (agent scope: starts runs and reports grounding; shown once): {raw_key}")

    def _sample_run(self, tenant, rng: random.Random, i: int, total: int) -> None:
        agent = AGENTS[i % len(AGENTS)]
        question = f"Sample question {i + 1}"
        run, _ = run_services.run_start(
            tenant=tenant, agent_name=agent, workflow_name="answer-question", input={"question": question}
        )
        quality = rng.random()
        answer, answer_source = rng.choice(GOOD_ANSWERS if quality > 0.4 else BAD_ANSWERS)
        ids = [answer_source, *rng.sample(sorted(set(CORPUS) - {answer_source}), 2)]
        results = [
            {
                "source_id": sid,
                "source_type": "document",
                "relevance": round(rng.uniform(0.3, 0.95), 2),
                "text": CORPUS[sid],
            }
            for sid in ids
        ]
        # The run's timeline, laid out first so that every row agrees with it (docs/dashboard.md#trace):
        # spread over the last week so the overview chart has a shape; within the run, a retrieval,
        # then one answer step per report (an LLM call nested in it, then a report), after_workflow last.
        # The times come from their own generator: `rng` draws what the outcomes depend on, as before.
        clock = random.Random(i * 7919 + total)
        started = timezone.now() - timedelta(hours=(total - i) * 168 / total, minutes=clock.randint(0, 50))
        at = started + timedelta(milliseconds=clock.randint(30, 90))
        retrieval_ms = rng.randint(20, 120)
        rng.randint(20, 120)  # drawn for the provenance's time before; the span's own duration now
        prompt_tokens = rng.randint(300, 900)
        run_services.run_record_span(
            tenant=tenant,
            run_id=run.pk,
            kind="retrieval",
            name="kb-search",
            started_at=at,
            ended_at=at + timedelta(milliseconds=retrieval_ms),
            span_id=f"r{run.pk}-retrieval",
            attributes={
                "provenance": {
                    "intent": {"text_queries": [question], "scope": "knowledge_base", "filters": {}},
                    "results_by_source": {"knowledge_base": results},
                    "total_results": len(results),
                    "deduplicated_to": len(results),
                    "retrieval_time_ms": retrieval_ms,
                }
            },
        )
        at += timedelta(milliseconds=retrieval_ms + clock.randint(5, 40))
        report_times = []
        for step in range(rng.choice([1, 1, 2])):
            step_id = f"r{run.pk}-answer-{step + 1}"
            llm_ms, format_ms = clock.randint(600, 3500), clock.randint(10, 60)
            step_end = at + timedelta(milliseconds=llm_ms + format_ms + 20)
            run_services.run_record_span(
                tenant=tenant,
                run_id=run.pk,
                kind="llm",
                name="gpt-4o-mini",
                input={"prompt": question},
                output={"text": answer},
                started_at=at + timedelta(milliseconds=5),
                ended_at=at + timedelta(milliseconds=5 + llm_ms),
                span_id=f"{step_id}-llm",
                parent_span_id=step_id,
                attributes={"prompt_tokens": prompt_tokens, "completion_tokens": 120},
            )
            run_services.run_record_span(
                tenant=tenant,
                run_id=run.pk,
                kind="tool",
                name="format-citations",
                started_at=at + timedelta(milliseconds=10 + llm_ms),
                ended_at=at + timedelta(milliseconds=10 + llm_ms + format_ms),
                span_id=f"{step_id}-format",
                parent_span_id=step_id,
            )
            # The parent is sent after its children, as a timed block ends after the blocks inside it.
            run_services.run_record_span(
                tenant=tenant,
                run_id=run.pk,
                kind="tool",
                name=f"answer step {step + 1}",
                input={"question": question},
                started_at=at,
                ended_at=step_end,
                span_id=step_id,
            )
            good = quality > 0.3
            scores = [
                round(rng.uniform(0.75, 0.98) if good else rng.uniform(0.3, 0.9), 2) for _ in range(rng.randint(2, 5))
            ]
            citations = ids[: rng.randint(1, 3)] if quality > 0.15 else []
            claims = [] if quality > 0.5 else ["The rate will fall by 2% next quarter."][: rng.randint(0, 1)]
            run_services.run_record_grounding(
                tenant=tenant,
                run_id=run.pk,
                grounding_scores=scores,
                citations=citations,
                unsupported_claims=claims,
                output_confidence=round(rng.uniform(0.3, 0.95), 2),
                output=answer,
                sources=[{"id": sid, "text": CORPUS[sid]} for sid in ids],
            )
            report_times.append(step_end + timedelta(milliseconds=clock.randint(5, 30)))
            at = report_times[-1] + timedelta(milliseconds=clock.randint(50, 400))
        run_services.run_complete(tenant=tenant, run_id=run.pk, result={"answer": "Sample answer"})
        rng.randint(0, 50), rng.uniform(0.4, 9.0)  # the start and length drawn here before
        ended = report_times[-1] + timedelta(milliseconds=clock.randint(20, 80))
        _move_in_time(run, started=started, report_times=report_times, ended=ended)


def _move_in_time(run: Run, *, started, report_times, ended) -> None:
    """Puts the rows the services wrote just now at the times the sample run was laid out for: its start
    and before_workflow, each report with its mid_execution decision, its end and after_workflow."""
    Run.objects.filter(pk=run.pk).update(
        started_at=started, ended_at=ended, duration_ms=run_duration_ms(started, ended)
    )
    phase_times = {Phase.BEFORE: started, Phase.AFTER: ended}
    for phase, at in phase_times.items():
        Decision.objects.filter(run_id=run.pk, phase=phase).update(created_at=at)
        Evaluation.objects.filter(run_id=run.pk, phase=phase).update(created_at=at)
    reports = list(GroundingReport.objects.filter(run_id=run.pk).order_by("seq"))
    for report, at in zip(reports, report_times, strict=True):
        GroundingReport.objects.filter(pk=report.pk).update(created_at=at)
        decisions = Decision.objects.filter(run_id=run.pk, report_id=report.pk)
        Evaluation.objects.filter(decision__in=decisions).update(created_at=at)
        decisions.update(created_at=at)
