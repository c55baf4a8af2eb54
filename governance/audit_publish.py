"""Publishing signed audit checkpoints outside the database (docs/security.md), from beat.

A checkpoint only anchors the chain where the database's writers cannot reach it. Each pass signs
every tenant's head and, when it moved since that channel last got one:

* appends it as one JSON line to ``AUDIT_CHECKPOINT_DIR/<tenant slug>.jsonl`` (append-only; ship
  the directory to write-once storage, or mount one there), and
* sends it to the tenant's webhooks subscribed to ``audit.checkpoint``.

The file is the record of what this channel has published: the last line's seq decides whether
the head moved, so a restarted beat neither repeats nor skips a head.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path

from django.conf import settings
from django_scopes import scope

from tenants.models import Tenant
from tenants.signed_checkpoints import checkpoint_sign
from webhooks.events import AUDIT_CHECKPOINT
from webhooks.models import WebhookDelivery
from webhooks.services import subscribed_events, webhook_emit

logger = logging.getLogger("groundrule.audit")


def checkpoint_file(slug: str) -> Path | None:
    directory = settings.AUDIT_CHECKPOINT_DIR
    return Path(directory) / f"{slug}.jsonl" if directory else None


def _last_line(handle) -> bytes:
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(max(0, size - 4096))
    lines = handle.read().rstrip(b"\n").rsplit(b"\n", 1)
    return lines[-1] if lines else b""


def _append(path: Path, checkpoint: dict) -> bool:
    """Appends ``checkpoint`` unless the file's last one has its seq; True when it was written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # a pass that overlaps the next one does not interleave lines
        try:
            last = json.loads(_last_line(handle) or b"null")
        except ValueError:
            last = None  # a torn last line: publish again after it
        if isinstance(last, dict) and last.get("seq") == checkpoint["seq"]:
            return False
        handle.write(json.dumps(checkpoint, separators=(",", ":")).encode() + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
        return True


def _last_sent_seq(tenant: Tenant):
    payload = (
        WebhookDelivery.objects.filter(tenant=tenant, event=AUDIT_CHECKPOINT)
        .order_by("-id")
        .values_list("payload", flat=True)
        .first()
    )
    return (payload or {}).get("data", {}).get("seq")


def checkpoints_publish() -> dict[str, int]:
    """One pass over every tenant with an audit log: what was published, by channel."""
    published = {"file": 0, "webhook": 0}
    if settings.AUDIT_KEYS.signer is None:
        logger.warning("audit checkpoints not published: AUDIT_SIGNING_KEYS is not set")
        return published
    for tenant in Tenant.objects.filter(audit_seq__gt=0).order_by("pk"):
        with scope(tenant=tenant):
            checkpoint = checkpoint_sign(tenant=tenant)
            path = checkpoint_file(tenant.slug)
            if path is not None and _append(path, checkpoint):
                published["file"] += 1
            if AUDIT_CHECKPOINT in subscribed_events(tenant=tenant) and _last_sent_seq(tenant) != checkpoint["seq"]:
                if webhook_emit(tenant=tenant, event=AUDIT_CHECKPOINT, data=checkpoint):
                    published["webhook"] += 1
    return published
