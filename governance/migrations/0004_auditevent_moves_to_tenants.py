"""The audit log belongs to tenants (the bottom layer every app writes audit events from).

State only: the table, its indexes and its append-only trigger stay where they are.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("governance", "0003_indexes_and_names")]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="AuditEvent")]),
    ]
