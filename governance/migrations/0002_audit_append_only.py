"""On PostgreSQL the audit log is append-only in the database itself, not only in the ORM."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION governance_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    -- Deleting a user sets actor_id to NULL; actor_label keeps who it was. Nothing else may change.
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
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
