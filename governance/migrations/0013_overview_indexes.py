"""The overview's indexes: runs per day by final action, and enforced violations per day with their
policy and agent, each read from the index alone (governance/selectors/overview.py).

`run_overview` (tenant, started_at, final_action) replaces the plain (tenant, started_at) index, whose
every use it serves. `evaluation_overview` holds only warn and block evaluations that are not shadow
verdicts, the rows the overview counts.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0012_score_audit_auditor"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="run",
            name="governance__tenant__e5b33a_idx",
        ),
        migrations.AddIndex(
            model_name="evaluation",
            index=models.Index(
                condition=models.Q(("action__in", ["warn", "block"]), ("shadow", False)),
                fields=["tenant", "created_at", "action", "policy_name", "agent_name"],
                name="evaluation_overview",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["tenant", "started_at", "final_action"], name="run_overview"),
        ),
    ]
