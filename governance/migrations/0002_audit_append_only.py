"""On PostgreSQL the audit log is append-only in the database itself, not only in the ORM."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION governance_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS governance_auditevent_no_change ON governance_auditevent;
CREATE TRIGGER governance_auditevent_no_change BEFORE UPDATE OR DELETE ON governance_auditevent
    FOR EACH ROW EXECUTE FUNCTION governance_auditevent_append_only();
"""
DROP = """
DROP TRIGGER IF EXISTS governance_auditevent_no_change ON governance_auditevent;
DROP FUNCTION IF EXISTS governance_auditevent_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("governance", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
