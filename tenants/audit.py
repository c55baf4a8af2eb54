"""Explicit audit events, written by services in the same transaction as the change they record."""

from dataclasses import dataclass
from typing import Any

from core.context import current_request_id

from .models import AuditEvent

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
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or obj.pk
    return AuditEvent.objects.create(
        tenant=tenant,
        action=action,
        actor=actor.user if actor.user is not None else None,
        actor_label=actor.label[:200],
        request_id=current_request_id(),
        object_type=object_type,
        object_id=str(object_id or ""),
        object_repr=str(obj)[:200] if obj is not None else "",
        before=mask_secrets(before),
        after=mask_secrets(after),
    )
