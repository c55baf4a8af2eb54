from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from tenants.models import Tenant


class Judgement(models.Model):
    """A cached LLM judgement, keyed by the hash of the exact request, so a replay costs nothing."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    result = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "key"], name="uniq_judgement_key")]
