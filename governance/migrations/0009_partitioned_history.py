"""Issue 15: on PostgreSQL, reports, spans and evaluations are partitioned by month of created_at.

SQLite keeps plain tables (the RunPython steps do nothing there). See core/partitions.py for what
partitioning changes and why.

Unique constraints must contain the partition key on a partitioned table, so `uniq_report_seq`
becomes (run_id, seq, created_at). (run, seq) stays unique because a report's seq is the run's
`report_count` taken in the same statement that increments it under the run's row lock
(governance/report_write.py), so two reports of a run never get the same number; the index
still serves look-ups by (run, seq).

Reversible: going back copies the rows into plain tables again.
"""

import django.db.models.deletion
from django.db import migrations, models

from core.partitions import partition_table, unpartition_table

TABLES = {
    "governance_groundingreport": "created_at",
    "governance_span": "created_at",
    "governance_evaluation": "created_at",
}


def forwards(apps, schema_editor):
    for table, key in TABLES.items():
        partition_table(schema_editor, table, key)


def backwards(apps, schema_editor):
    for table in TABLES:
        unpartition_table(schema_editor, table)


class Migration(migrations.Migration):
    dependencies = [("governance", "0008_score_audit")]

    operations = [
        # A partitioned table cannot be referenced by id alone: these keys lose their database
        # constraint first (the ORM keeps cascading deletes).
        migrations.AlterField(
            model_name="decision",
            name="report",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="decisions",
                to="governance.groundingreport",
            ),
        ),
        migrations.AlterField(
            model_name="scoreaudit",
            name="report",
            field=models.OneToOneField(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="score_audit",
                to="governance.groundingreport",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
