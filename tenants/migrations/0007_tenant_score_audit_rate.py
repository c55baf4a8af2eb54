import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tenants", "0006_api_key_scopes")]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="score_audit_rate",
            field=models.FloatField(
                default=0.1,
                validators=[
                    django.core.validators.MinValueValidator(0.0),
                    django.core.validators.MaxValueValidator(1.0),
                ],
            ),
        ),
    ]
