"""Issue 15: on PostgreSQL, the audit log (governance_auditevent) is partitioned by month of created_at.

SQLite keeps a plain table. See core/partitions.py for what partitioning changes and why.

`uniq_audit_seq` becomes (tenant_id, seq, created_at): a unique constraint on a partitioned table
must contain the partition key. (tenant, seq) stays unique because the only writer
(tenants/audit.py) numbers a row from the tenant's chain head, which it reads and advances under
the tenant row's lock, and `verify_audit_log` would report a repeated seq. The append-only
trigger is recreated on the partitioned table (row triggers reach every partition); dropping a
whole month (retention) is DROP TABLE, which no row trigger sees, so only retention can do it.

Reversible: going back copies the rows into a plain table again.
"""

from django.db import migrations

from core.partitions import partition_table, unpartition_table

TABLE = "governance_auditevent"


def forwards(apps, schema_editor):
    partition_table(schema_editor, TABLE, "created_at")


def backwards(apps, schema_editor):
    unpartition_table(schema_editor, TABLE)


class Migration(migrations.Migration):
    dependencies = [("tenants", "0008_retention")]

    operations = [migrations.RunPython(forwards, backwards)]
