import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from tenants import crypto
from tenants.models import Tenant


class Webhook(models.Model):
    """Where a tenant wants events POSTed, signed with a secret only the receiver and we know."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True, default="")
    # Encrypted like tenant secrets: signing needs the plaintext, so a hash will not do.
    secret_ciphertext = models.TextField()
    secret_hint = models.CharField(max_length=32)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["tenant", "enabled"])]

    def __str__(self) -> str:
        return self.url[:200]

    def reveal_secret(self) -> str:
        """For signing only. Never render or log it."""
        return crypto.decrypt(self.secret_ciphertext)


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RETRYING = "retrying"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    # X-Groundrule-Delivery: receivers de-duplicate on it, so it never changes across retries.
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event = models.CharField(max_length=64)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    redelivery_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["tenant", "webhook", "-id"])]

    @property
    def is_final(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)
