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
from governance.models import Decision, Evaluation, Run, ScoreAudit, Span, run_duration_ms
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
            # The sampled audits were stored today; date each on its run's day, as a live server would
            # have, so the score audit chart spreads over the week like the runs (docs/score-audit.md).
            for audit in ScoreAudit.objects.filter(tenant=tenant).select_related("run"):
                ScoreAudit.objects.filter(pk=audit.pk).update(created_at=audit.run.started_at)
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
        started = timezone.now()
        run_services.run_record_span(
            tenant=tenant,
            run_id=run.pk,
            kind="retrieval",
            name="kb-search",
            started_at=started,
            ended_at=started + timedelta(milliseconds=rng.randint(20, 120)),
            attributes={
                "provenance": {
                    "intent": {"text_queries": [question], "scope": "knowledge_base", "filters": {}},
                    "results_by_source": {"knowledge_base": results},
                    "total_results": len(results),
                    "deduplicated_to": len(results),
                    "retrieval_time_ms": rng.randint(20, 120),
                }
            },
        )
        run_services.run_record_span(
            tenant=tenant,
            run_id=run.pk,
            kind="llm",
            name="gpt-4o-mini",
            input={"prompt": question},
            output={"text": "…"},
            attributes={"prompt_tokens": rng.randint(300, 900), "completion_tokens": 120},
        )
        for _step in range(rng.choice([1, 1, 2])):
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
        run_services.run_complete(tenant=tenant, run_id=run.pk, result={"answer": "Sample answer"})
        # Spread the sample runs over the last week so the overview chart has a shape.
        started = timezone.now() - timedelta(hours=(total - i) * 168 / total, minutes=rng.randint(0, 50))
        ended = started + timedelta(seconds=rng.uniform(0.4, 9.0))
        # update() skips Run.save(), which keeps duration_ms: the runs list shows and sorts by that column.
        Run.objects.filter(pk=run.pk).update(
            started_at=started, ended_at=ended, duration_ms=run_duration_ms(started, ended)
        )
        Decision.objects.filter(run_id=run.pk).update(created_at=started)
        Evaluation.objects.filter(run_id=run.pk).update(created_at=started)
        Span.objects.filter(run_id=run.pk).update(started_at=started, ended_at=started + timedelta(milliseconds=80))
