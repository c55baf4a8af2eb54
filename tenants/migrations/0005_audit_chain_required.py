"""The audit hash chain (issue 11), step 3: every row has its place in the chain, once per tenant."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tenants", "0004_audit_chain_backfill")]

    operations = [
        migrations.AlterField("auditevent", "seq", models.PositiveBigIntegerField()),
        migrations.AlterField("auditevent", "prev_hash", models.CharField(max_length=64)),
        migrations.AlterField("auditevent", "hash", models.CharField(max_length=64)),
        migrations.AddConstraint(
            "auditevent", models.UniqueConstraint(fields=("tenant", "seq"), name="uniq_audit_seq")
        ),
    ]
