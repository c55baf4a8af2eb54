from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from governance.models import Run
from tenants.models import Tenant


class TraceRun(models.Model):
    """Which run an OpenTelemetry trace became: one run per trace id and tenant, made on first sight."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "trace_id"], name="uniq_otlp_trace_per_tenant")]
