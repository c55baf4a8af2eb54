import os

from celery import Celery
from celery.schedules import crontab

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("groundrule")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Periodic work for `celery beat` (deploy/compose.yaml runs one beat process, never two).
app.conf.beat_schedule = {
    # Months are made three ahead, so a few missed days (beat down, a lock timeout) cost nothing.
    "ensure-partitions": {"task": "governance.ensure_partitions", "schedule": crontab(hour=3, minute=17)},
}
