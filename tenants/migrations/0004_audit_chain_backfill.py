"""The audit hash chain (issue 11), step 2: chain the rows written before it, per tenant in id order.

On PostgreSQL the table refuses updates (governance/migrations/0002_audit_append_only.py); the
trigger is switched off for this backfill only, inside the migration's transaction.
"""

from django.db import migrations

from tenants import chain

TRIGGER = "governance_auditevent_no_change"


def _trigger_exists(schema_editor) -> bool:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_trigger WHERE tgname = %s", [TRIGGER])
        return cursor.fetchone() is not None


def forwards(apps, schema_editor):
    AuditEvent = apps.get_model("tenants", "AuditEvent")
    Tenant = apps.get_model("tenants", "Tenant")
    postgres = schema_editor.connection.vendor == "postgresql" and _trigger_exists(schema_editor)
    if postgres:
        schema_editor.execute(f"ALTER TABLE governance_auditevent DISABLE TRIGGER {TRIGGER}")
    for tenant in Tenant.objects.all():
        seq, previous = 0, chain.GENESIS
        for event in AuditEvent.objects.filter(tenant_id=tenant.pk).order_by("id").iterator(chunk_size=2000):
            seq += 1
            digest = chain.row_hash(
                tenant=tenant.pk,
                seq=seq,
                time=event.created_at,
                actor=event.actor_label,
                action=event.action,
                object_type=event.object_type,
                object_id=event.object_id,
                object_repr=event.object_repr,
                before=event.before,
                after=event.after,
                request_id=event.request_id,
                prev_hash=previous,
            )
            AuditEvent.objects.filter(pk=event.pk).update(seq=seq, prev_hash=previous, hash=digest)
            previous = digest
        Tenant.objects.filter(pk=tenant.pk).update(audit_seq=seq, audit_hash=digest if seq else "")
    if postgres:
        schema_editor.execute(f"ALTER TABLE governance_auditevent ENABLE TRIGGER {TRIGGER}")


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_audit_chain_fields")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
