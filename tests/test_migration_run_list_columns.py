"""Migration 0011 fills in the runs list's columns for the runs already stored: the worst of the
reports' best scores, the judges' estimated cost (a cached answer counts nothing) and the duration."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)

TENANTS_LATEST = ("tenants", "0009_partitioned_audit_log")
BEFORE = [("governance", "0010_report_score_inflation"), TENANTS_LATEST]
AFTER = [("governance", "0011_run_list_columns"), TENANTS_LATEST]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture(autouse=True)
def _back_to_the_latest_state():
    """BEFORE moves tenants back too; the tests after this one in the worker need every migration."""
    yield
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_backfill_gives_stored_runs_their_score_cost_and_duration():
    apps = _migrate(BEFORE)
    Tenant = apps.get_model("tenants", "Tenant")
    Run = apps.get_model("governance", "Run")
    GroundingReport = apps.get_model("governance", "GroundingReport")
    Evaluation = apps.get_model("governance", "Evaluation")
    tenant = Tenant.objects.create(slug="old", name="Old")
    start = timezone.now() - timedelta(minutes=5)
    done = Run.objects.create(tenant=tenant, agent_name="a", started_at=start, ended_at=start + timedelta(seconds=3))
    running = Run.objects.create(tenant=tenant, agent_name="a", started_at=start)
    for seq, scores in enumerate(([0.9, 0.2], [0.6], []), start=1):
        GroundingReport.objects.create(tenant=tenant, run=done, seq=seq, grounding_scores=scores)

    def evaluation(run, source, metadata):
        Evaluation.objects.create(
            tenant=tenant,
            run=run,
            policy_name="p",
            category="grounding",
            agent_name="a",
            phase="after_workflow",
            action="warn",
            source=source,
            metadata=metadata,
        )

    evaluation(done, "llm_judge", {"judge": {"cost_usd": 0.002, "cached": False}})
    evaluation(done, "llm_judge", {"judge": {"cost_usd": 0.002, "cached": True}})
    evaluation(done, "verifier", {"escalation": {"cost_usd": 0.0005}})
    evaluation(done, "engine", {"score": 0.2})
    _migrate(AFTER)

    from django_scopes import scopes_disabled

    from governance.models import Run as Current

    with scopes_disabled():
        done_now, running_now = Current.objects.get(pk=done.pk), Current.objects.get(pk=running.pk)
    assert done_now.worst_score == 0.6 and done_now.duration_ms == 3000
    assert done_now.judge_cost == pytest.approx(0.0025)
    assert running_now.worst_score is None and running_now.duration_ms is None and running_now.judge_cost == 0.0
