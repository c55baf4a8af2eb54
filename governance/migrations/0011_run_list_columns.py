"""The runs list's columns on the run itself: worst grounding score, LLM judge cost, duration, and the
indexes its sorts read (governance/selectors/run_list.py).

The data step fills them in for the runs already stored, from their reports and evaluations, run by
run in chunks (the same definitions as governance.models.report_score and judge_cost_of, copied here
as a migration keeps its own). Going back drops the columns; nothing else changed.
"""

import math

from django.db import migrations, models

CHUNK = 1000


def _usd(value) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else 0.0


def _cost(metadata) -> float:
    if not isinstance(metadata, dict):
        return 0.0
    calls = [metadata.get(key) for key in ("judge", "escalation")]
    return sum(_usd(call.get("cost_usd")) for call in calls if isinstance(call, dict) and not call.get("cached"))


def backfill(apps, schema_editor):
    Run = apps.get_model("governance", "Run")
    GroundingReport = apps.get_model("governance", "GroundingReport")
    Evaluation = apps.get_model("governance", "Evaluation")
    run_ids = list(Run._base_manager.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(run_ids), CHUNK):
        chunk = run_ids[start : start + CHUNK]
        worst: dict[int, float] = {}
        for run_id, scores in GroundingReport._base_manager.filter(run_id__in=chunk).values_list(
            "run_id", "grounding_scores"
        ):
            numbers = [s for s in scores or [] if isinstance(s, (int, float)) and not isinstance(s, bool)]
            if numbers:
                worst[run_id] = min(worst.get(run_id, math.inf), max(numbers))
        cost: dict[int, float] = {}
        judged = Evaluation._base_manager.filter(run_id__in=chunk).exclude(source="engine")
        for run_id, metadata in judged.values_list("run_id", "metadata"):
            cost[run_id] = cost.get(run_id, 0.0) + _cost(metadata)
        runs = list(Run._base_manager.filter(pk__in=chunk).only("pk", "started_at", "ended_at"))
        for run in runs:
            run.worst_score = worst.get(run.pk)
            run.judge_cost = cost.get(run.pk, 0.0)
            if run.ended_at and run.started_at:
                run.duration_ms = max(0, int((run.ended_at - run.started_at).total_seconds() * 1000))
        Run._base_manager.bulk_update(runs, ["worst_score", "judge_cost", "duration_ms"])


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0010_report_score_inflation"),
        ("tenants", "0009_partitioned_audit_log"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="duration_ms",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="run",
            name="judge_cost",
            field=models.FloatField(default=0.0),
        ),
        migrations.AddField(
            model_name="run",
            name="worst_score",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["tenant", "final_action", "id"], name="run_sort_action"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["tenant", "worst_score", "id"], name="run_sort_score"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["tenant", "duration_ms", "id"], name="run_sort_duration"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["tenant", "judge_cost", "id"], name="run_sort_cost"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["tenant", "workflow_name", "id"], name="run_sort_workflow"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["tenant", "started_at", "id"], name="run_sort_started"),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
