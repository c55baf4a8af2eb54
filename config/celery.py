import os

from celery import Celery
from celery.schedules import crontab

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("groundrule")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Periodic work; exactly one beat process per deployment enqueues it (docs/deploy.md).
app.conf.beat_schedule = {
    # Months are made three ahead, so a few missed days (beat down, a lock timeout) cost nothing.
    "ensure-partitions-daily": {"task": "governance.ensure_partitions", "schedule": crontab(hour=2, minute=47)},
    # Retention (governance/retention.py) at a quiet hour, UTC.
    "apply-retention-daily": {"task": "governance.apply_retention", "schedule": crontab(hour=3, minute=17)},
}
