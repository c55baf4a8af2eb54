"""Retention (issue 15 item 3): the tenant's two settings, audit checkpoints, and, on PostgreSQL,
an append-only trigger that lets retention delete the audit rows a checkpoint covers.

A DELETE passes the trigger only inside a transaction that has said
`SET LOCAL groundrule.audit_prune = 'on'` (tenants/audit.py: audit_log_prune) and only for a row at or
before one of its tenant's checkpoints; every other UPDATE or DELETE is refused as before.
"""

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION governance_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    -- Deleting a user sets actor_id to NULL; actor_label keeps who it was. Nothing else may change.
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    -- Retention: only rows a checkpoint already covers, only when the transaction asks for it.
    IF TG_OP = 'DELETE' AND current_setting('groundrule.audit_prune', true) = 'on'
       AND EXISTS (SELECT 1 FROM tenants_auditcheckpoint c
                   WHERE c.tenant_id = OLD.tenant_id AND c.seq >= OLD.seq) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END;
$$ LANGUAGE plpgsql;
"""

APPEND_ONLY_BEFORE = """
CREATE OR REPLACE FUNCTION governance_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END;
$$ LANGUAGE plpgsql;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(APPEND_ONLY)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(APPEND_ONLY_BEFORE)


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0007_tenant_score_audit_rate"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="audit_retention_days",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(36500),
                ],
            ),
        ),
        migrations.AddField(
            model_name="tenant",
            name="retention_days",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(36500),
                ],
            ),
        ),
        migrations.CreateModel(
            name="AuditCheckpoint",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.PositiveBigIntegerField()),
                ("hash", models.CharField(max_length=64)),
                ("removed", models.PositiveBigIntegerField()),
                ("before", models.DateTimeField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.tenant"
                    ),
                ),
            ],
            options={
                "ordering": ["-seq"],
                "constraints": [models.UniqueConstraint(fields=("tenant", "seq"), name="uniq_audit_checkpoint_seq")],
            },
        ),
        migrations.RunPython(forwards, backwards),
    ]
