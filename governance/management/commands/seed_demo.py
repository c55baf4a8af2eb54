"""Loads the demo tenant: an admin login, the seed's example policies and sample runs.

Idempotent: a second `make run` finds the tenant and only prints the login again.
"""

import random
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone
from django_scopes import scope

from governance import services as run_services
from governance.audit import Actor
from governance.models import Decision, Evaluation, Run
from policies import services as policy_services
from tenants import services as tenant_services
from tenants.models import Role, Tenant

DEMO_SLUG = "demo"
ADMIN_EMAIL = "admin@demo.local"
REVIEWER_EMAIL = "reviewer@demo.local"
PASSWORD = "groundrule-demo"

POLICIES = [
    ("Strict Research Grounding", ["research-*"], {
        "require_source_grounding": True, "min_grounding_score": 0.8, "min_citations": 2,
        "max_unsupported_claims": 0, "abstention_threshold": 0.5,
        "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
        "action_on_violation": "block"}),
    ("Lenient RAG Agent", ["support-*"], {
        "require_source_grounding": False, "min_grounding_score": 0.6, "min_citations": 1,
        "max_unsupported_claims": 3, "abstention_threshold": None, "action_on_violation": "warn"}),
    ("RAG Pipeline", ["rag-*"], {
        "min_grounding_score": 0.7, "score_relevance_floor": 0.5, "score_eval_mode": "all", "min_citations": 1,
        "action_on_violation": "block"}),
    ("Medical Q&A", ["medical-*"], {
        "require_source_grounding": True, "min_grounding_score": 0.9, "min_citations": 3,
        "max_unsupported_claims": 0, "abstention_threshold": 0.7,
        "abstention_response": "I cannot provide a reliable answer based on available evidence. "
                               "Please consult a qualified professional.",
        "action_on_violation": "block"}),
]

AGENTS = ["research-agent", "support-bot", "rag-indexer", "medical-assistant"]
SOURCES = ["Federal Reserve Report", "IMF Analysis", "SEC Filing 2023", "Legal Review", "WHO Guidance",
           "Internal KB #42", "Product Manual v3"]


class Command(BaseCommand):
    help = "Create the demo tenant with an admin login, sample policies and sample runs."

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=60)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, runs, seed, **options):
        tenant = Tenant.objects.filter(slug=DEMO_SLUG).first()
        if tenant is not None:
            self.stdout.write(f"Demo tenant already loaded. Sign in as {ADMIN_EMAIL} / {PASSWORD}")
            return
        actor = Actor.system("command:seed_demo")
        rng = random.Random(seed)
        with transaction.atomic():
            tenant = tenant_services.tenant_create(slug=DEMO_SLUG, name="Demo Research Co", actor=actor)
            tenant_scope = scope(tenant=tenant)
            tenant_scope.__enter__()
            tenant_services.user_create_admin(tenant=tenant, email=ADMIN_EMAIL, password=PASSWORD, actor=actor)
            reviewer = tenant_services.user_create_admin(tenant=tenant, email=REVIEWER_EMAIL, password=PASSWORD,
                                                         actor=actor)
            tenant_services.membership_set(tenant=tenant, user=reviewer, role=Role.REVIEWER, actor=actor)
            for name, agents, rules in POLICIES:
                policy_services.policy_create(tenant=tenant, actor=actor, name=name, category="grounding",
                                              rules=rules, scope={"agents": agents})
            _, raw_key = tenant_services.api_key_create(tenant=tenant, name="demo", actor=actor)
            tenant_scope.__exit__(None, None, None)
        tenant.refresh_from_db()
        with scope(tenant=tenant):
            for i in range(runs):
                self._sample_run(tenant, rng, i, runs)
        self.stdout.write(self.style.SUCCESS(f"Loaded demo tenant '{tenant.slug}' with {runs} sample runs."))
        self.stdout.write(f"Sign in as {ADMIN_EMAIL} / {PASSWORD} (reviewer: {REVIEWER_EMAIL})")
        self.stdout.write(f"Demo API key (shown once): {raw_key}")

    def _sample_run(self, tenant, rng: random.Random, i: int, total: int) -> None:
        agent = AGENTS[i % len(AGENTS)]
        run, _ = run_services.run_start(tenant=tenant, agent_name=agent, workflow_name="answer-question",
                                        input={"question": f"Sample question {i + 1}"})
        quality = rng.random()
        for _step in range(rng.choice([1, 1, 2])):
            good = quality > 0.3
            scores = [round(rng.uniform(0.75, 0.98) if good else rng.uniform(0.3, 0.9), 2)
                      for _ in range(rng.randint(2, 5))]
            citations = rng.sample(SOURCES, rng.randint(1, 3)) if quality > 0.15 else []
            claims = [] if quality > 0.5 else ["The rate will fall by 2% next quarter."][: rng.randint(0, 1)]
            run_services.run_record_grounding(
                tenant=tenant, run_id=run.pk, grounding_scores=scores, citations=citations,
                unsupported_claims=claims, output_confidence=round(rng.uniform(0.3, 0.95), 2),
                output="A sample grounded answer citing its sources.",
            )
        run_services.run_complete(tenant=tenant, run_id=run.pk, result={"answer": "Sample answer"})
        # Spread the sample runs over the last week so the overview chart has a shape.
        started = timezone.now() - timedelta(hours=(total - i) * 168 / total, minutes=rng.randint(0, 50))
        ended = started + timedelta(seconds=rng.uniform(0.4, 9.0))
        Run.objects.filter(pk=run.pk).update(started_at=started, ended_at=ended)
        Decision.objects.filter(run_id=run.pk).update(created_at=started)
        Evaluation.objects.filter(run_id=run.pk).update(created_at=started)
