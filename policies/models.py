from django.conf import settings
from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from tenants.models import Tenant


class Mode(models.TextChoices):
    ENFORCE = "enforce"
    SHADOW = "shadow"


class Policy(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="policies")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    category = models.CharField(max_length=64)
    # The rules as the admin submitted them (validated, coerced); defaults are filled in on read,
    # so a later change of a default reaches policies that never set that rule.
    rules = models.JSONField(default=dict)
    scope = models.JSONField(default=dict)
    enabled = models.BooleanField(default=True)
    # shadow: evaluated and recorded on every call, but never changes a decision (docs/policy-lifecycle.md,
    # "Policy lifecycle"); lets an admin watch a policy on live traffic before it enforces.
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.ENFORCE)
    version = models.PositiveIntegerField(default=1)
    # Applied from policy files (docs/policies-as-code.md): the next apply overwrites a dashboard edit,
    # so the dashboard says so and asks before saving one.
    managed_by_code = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="uniq_policy_name")]
        indexes = [models.Index(fields=["tenant", "enabled"])]

    def __str__(self) -> str:
        return self.name

    @property
    def agents(self) -> list[str]:
        return list((self.scope or {}).get("agents") or [])

    @property
    def effective_rules(self) -> dict:
        from policies.categories import get_category

        return get_category(self.category).effective_rules(self.rules)

    def snapshot(self) -> dict:
        return {
            "id": self.pk,
            "name": self.name,
            "description": self.description,
            "category": self.category,
            "rules": self.rules,
            "scope": self.scope,
            "enabled": self.enabled,
            "mode": self.mode,
            "version": self.version,
        }


class PolicyVersion(models.Model):
    class Change(models.TextChoices):
        CREATED = "created"
        UPDATED = "updated"
        ENABLED = "enabled"
        DISABLED = "disabled"
        DELETED = "deleted"
        ROLLED_BACK = "rolled_back"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # Kept after the policy is deleted, so its history stays readable.
    policy = models.ForeignKey(Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="versions")
    policy_ref = models.BigIntegerField(db_index=True)
    version = models.PositiveIntegerField()
    change = models.CharField(max_length=16, choices=Change.choices)
    snapshot = models.JSONField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    # For a rollback: the version whose settings this one restored ("rolled back to vN").
    rolled_back_to = models.PositiveIntegerField(null=True, blank=True)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-id"]
