"""Explicit audit events, written by services in the same transaction as the change they record."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections, router, transaction
from django.utils import timezone

from core.context import current_request_id
from core.deletion import BATCH, delete_by_ids

from . import chain
from .models import AuditCheckpoint, AuditEvent, Membership, Tenant

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


def _chain_rows(tenant, after_seq: int):
    return (
        AuditEvent.objects.filter(tenant=tenant, seq__gt=after_seq)
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


def audit_checkpoint_latest(*, tenant) -> AuditCheckpoint | None:
    return AuditCheckpoint.objects.filter(tenant=tenant).order_by("-seq").first()


def audit_chain_verify(*, tenant, expect: dict[int, str] | None = None) -> chain.Verdict:
    """Recompute the tenant's chain from the stored rows; the first row that fails, if any.

    After retention pruned the log, the chain starts at the latest checkpoint: rows at or before it
    are not checked (a pass that stopped part-way leaves some; the next pass removes them).
    ``expect`` holds the (seq -> hash) of signed checkpoints (tenants/signed_checkpoints.py): the chain
    must lead to each. One older than what retention kept cannot be checked: a ValidationError.
    """
    head = Tenant.objects.only("id", "audit_seq", "audit_hash").get(pk=tenant.pk)
    checkpoint = audit_checkpoint_latest(tenant=tenant)
    start = (checkpoint.seq, checkpoint.hash) if checkpoint is not None else None
    if expect and start is not None and min(expect) < start[0]:
        raise ValidationError(
            {
                "seq": f"Rows up to seq {start[0]} were removed by retention, so a checkpoint at seq {min(expect)} "
                "cannot be checked against what is kept."
            }
        )
    rows = (
        {**row, "tenant_id": head.pk, "actor": row["actor_label"]}
        for row in _chain_rows(tenant, after_seq=start[0] if start else 0)
    )
    return chain.verify(rows, head=(head.audit_seq, head.audit_hash), start=start, expect=expect)


@dataclass(frozen=True)
class AuditPrune:
    removed: int
    checkpoint: AuditCheckpoint | None


def _last_row_before(tenant, before: datetime) -> dict | None:
    # By seq, not by time: a chain can only lose a prefix. Every row created before the cutoff has a
    # seq at or below this one.
    return (
        AuditEvent.objects.filter(tenant=tenant, created_at__lt=before).order_by("-seq").values("seq", "hash").first()
    )


def audit_checkpoint_record(*, tenant, before: datetime) -> AuditCheckpoint | None:
    """The checkpoint after which the chain is kept once rows created before `before` go: a new one
    when there is something new to remove, else the latest (None when the log was never pruned).

    Recorded before any row is removed, whether rows then go by batched deletes or with a dropped
    partition, so the chain verifies at every moment in between.
    """
    latest = audit_checkpoint_latest(tenant=tenant)
    last = _last_row_before(tenant, before)
    if last is None or (latest is not None and last["seq"] <= latest.seq):
        return latest
    try:
        with transaction.atomic():
            return AuditCheckpoint.objects.create(
                tenant=tenant,
                seq=last["seq"],
                hash=last["hash"],
                removed=last["seq"] - (latest.seq if latest is not None else 0),
                before=before,
            )
    except IntegrityError:  # a pass running beside this one recorded the same checkpoint
        return audit_checkpoint_latest(tenant=tenant)


def _allow_prune(connection, allow: bool) -> None:
    # The append-only trigger lets a DELETE through only in a transaction that asked (and only for
    # rows a checkpoint covers). SET LOCAL would last to the end of an outer transaction when this
    # runs inside one (a savepoint's release keeps it), so it is switched off again right after.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL groundrule.audit_prune = '{'on' if allow else 'off'}'")


def audit_log_prune(*, tenant, before: datetime, dry_run: bool = False, batch: int = BATCH) -> AuditPrune:
    """Remove the tenant's audit rows created before `before`, after recording a checkpoint, in
    batches of `batch` rows, each its own transaction. The rows that stay still verify."""
    if dry_run:
        last = _last_row_before(tenant, before)
        latest = audit_checkpoint_latest(tenant=tenant)
        through = max(last["seq"] if last else 0, latest.seq if latest else 0)
        return AuditPrune(AuditEvent.objects.filter(tenant=tenant, seq__lte=through).count(), None)
    checkpoint = audit_checkpoint_record(tenant=tenant, before=before)
    if checkpoint is None:
        return AuditPrune(0, None)
    connection = connections[router.db_for_write(AuditEvent)]
    removed = 0
    while True:
        with transaction.atomic(using=connection.alias):
            ids = list(
                AuditEvent.objects.filter(tenant=tenant, seq__lte=checkpoint.seq)
                .order_by("seq")
                .values_list("id", flat=True)[:batch]
            )
            if not ids:
                break
            _allow_prune(connection, True)
            removed += delete_by_ids(AuditEvent, ids)
            _allow_prune(connection, False)
    return AuditPrune(removed, checkpoint)


def workspaces_of(users) -> list[Tenant]:
    """The workspaces any of ``users`` belongs to: the log is per workspace, so a change to a person's
    own account (their sign-in, their second factors) is recorded in each of theirs."""
    ids = Membership.objects.with_scopes_disabled().filter(user__in=users).values("tenant_id")
    return list(Tenant.objects.filter(pk__in=ids).order_by("pk"))


def audit_person(
    *, user, action: str, actor: Actor, object_type: str = "auth.user", object_id: Any = None, before=None, after=None
) -> None:
    """One row in each workspace ``user`` belongs to, so each workspace's admins see it in their log."""
    for tenant in workspaces_of([user]):
        audit_record(
            tenant=tenant,
            action=action,
            actor=actor,
            object_type=object_type,
            object_id=user.pk if object_id is None else object_id,
            before=before,
            after=after,
        )
