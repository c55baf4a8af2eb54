"""The audit log model, moved here from governance; the table `governance_auditevent` is unchanged."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0001_initial"),
        ("governance", "0004_auditevent_moves_to_tenants"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("action", models.CharField(db_index=True, max_length=100)),
                        ("actor_label", models.CharField(blank=True, default="", max_length=200)),
                        ("request_id", models.CharField(blank=True, default="", max_length=64)),
                        ("object_type", models.CharField(blank=True, default="", max_length=64)),
                        ("object_id", models.CharField(blank=True, default="", max_length=64)),
                        ("object_repr", models.CharField(blank=True, default="", max_length=200)),
                        ("before", models.JSONField(blank=True, null=True)),
                        ("after", models.JSONField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        (
                            "actor",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "tenant",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.tenant"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "governance_auditevent",
                        "ordering": ["-id"],
                        "indexes": [models.Index(fields=["tenant", "-id"], name="governance__tenant__a467f4_idx")],
                    },
                ),
            ],
        ),
    ]
