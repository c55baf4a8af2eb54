"""API key scopes: keys that exist now become `legacy` (full rights, as before); new keys default to `agent`."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0005_audit_chain_required"),
    ]

    operations = [
        # Added with "legacy" so every existing row keeps the full rights it had...
        migrations.AddField(
            model_name="apikey",
            name="scope",
            field=models.CharField(
                choices=[("agent", "Agent"), ("read", "Read"), ("admin", "Admin"), ("legacy", "Legacy (full rights)")],
                default="legacy",
                max_length=16,
            ),
        ),
        # ...then the default for new rows becomes the least privilege an agent needs.
        migrations.AlterField(
            model_name="apikey",
            name="scope",
            field=models.CharField(
                choices=[("agent", "Agent"), ("read", "Read"), ("admin", "Admin"), ("legacy", "Legacy (full rights)")],
                default="agent",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="apikey",
            name="agents",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="apikey",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
