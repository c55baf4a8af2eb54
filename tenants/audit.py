"""Explicit audit events, written by services in the same transaction as the change they record."""

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.context import current_request_id

from . import chain
from .models import AuditEvent, Tenant

SECRET_MASK = "••••••"
_SECRET_FIELDS = {"value", "key", "api_key", "secret", "password", "ciphertext", "key_hash", "token"}


@dataclass(frozen=True)
class Actor:
    """Who made a change: a signed-in user, an API key, or the system (commands, tasks)."""

    user: Any = None
    api_key: Any = None
    label_override: str = ""

    @property
    def label(self) -> str:
        if self.label_override:
            return self.label_override
        if self.user is not None:
            return self.user.get_username()
        if self.api_key is not None:
            return f"api-key:{self.api_key.prefix}"
        return "system"

    @classmethod
    def system(cls, label: str = "system") -> "Actor":
        return cls(label_override=label)

    @classmethod
    def from_request(cls, request) -> "Actor":
        api_key = getattr(request, "api_key", None)
        if api_key is not None:
            return cls(api_key=api_key)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return cls(user=user)
        return cls.system()


def mask_secrets(data: Any) -> Any:
    if isinstance(data, dict):
        return {
            k: (SECRET_MASK if k.lower() in _SECRET_FIELDS and v not in (None, "") else mask_secrets(v))
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [mask_secrets(v) for v in data]
    return data


def audit_record(
    *,
    tenant,
    action: str,
    actor: Actor,
    obj: Any = None,
    object_type: str = "",
    object_id: Any = "",
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    """Append one row to the tenant's audit chain (tenants/chain.py).

    The tenant row holds the chain's head and is locked (SELECT ... FOR UPDATE) for the rest of
    the caller's transaction: a second writer of the same tenant waits here and then reads the
    head the first one wrote, so two rows can never claim the same predecessor.
    """
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or obj.pk
    fields = {
        "action": action,
        "actor_label": actor.label[:200],
        "request_id": current_request_id(),
        "object_type": object_type,
        "object_id": str(object_id or ""),
        "object_repr": str(obj)[:200] if obj is not None else "",
        # As the JSON column will give them back, so the hash is over what is stored.
        "before": chain.normalise(mask_secrets(before)),
        "after": chain.normalise(mask_secrets(after)),
    }
    with transaction.atomic():
        head = Tenant.objects.select_for_update().only("id", "audit_seq", "audit_hash").get(pk=tenant.pk)
        seq, prev_hash = head.audit_seq + 1, head.audit_hash or chain.GENESIS
        created_at = timezone.now()
        digest = chain.row_hash(
            tenant=head.pk,
            seq=seq,
            time=created_at,
            actor=fields["actor_label"],
            action=action,
            object_type=fields["object_type"],
            object_id=fields["object_id"],
            object_repr=fields["object_repr"],
            before=fields["before"],
            after=fields["after"],
            request_id=fields["request_id"],
            prev_hash=prev_hash,
        )
        event = AuditEvent.objects.create(
            tenant=tenant,
            actor=actor.user if actor.user is not None else None,
            created_at=created_at,
            seq=seq,
            prev_hash=prev_hash,
            hash=digest,
            **fields,
        )
        Tenant.objects.filter(pk=head.pk).update(audit_seq=seq, audit_hash=digest)
    return event


def _chain_rows(tenant):
    return (
        AuditEvent.objects.filter(tenant=tenant)
        .order_by("seq")
        .values(
            "id",
            "seq",
            "created_at",
            "actor_label",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "before",
            "after",
            "request_id",
            "prev_hash",
            "hash",
        )
        .iterator(chunk_size=2000)
    )


def audit_chain_verify(*, tenant) -> chain.Verdict:
    """Recompute the tenant's whole chain from the stored rows; the first row that fails, if any."""
    head = Tenant.objects.only("id", "audit_seq", "audit_hash").get(pk=tenant.pk)
    rows = ({**row, "tenant_id": head.pk, "actor": row["actor_label"]} for row in _chain_rows(tenant))
    return chain.verify(rows, head=(head.audit_seq, head.audit_hash))
