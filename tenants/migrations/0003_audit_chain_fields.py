"""The audit hash chain (issue 11), step 1: the columns, empty for the rows already there."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tenants", "0002_auditevent")]

    operations = [
        migrations.AddField("tenant", "audit_seq", models.PositiveBigIntegerField(default=0)),
        migrations.AddField("tenant", "audit_hash", models.CharField(blank=True, default="", max_length=64)),
        migrations.AddField("auditevent", "seq", models.PositiveBigIntegerField(null=True)),
        migrations.AddField("auditevent", "prev_hash", models.CharField(default="", max_length=64)),
        migrations.AddField("auditevent", "hash", models.CharField(default="", max_length=64)),
    ]
