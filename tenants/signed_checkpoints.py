"""Signed checkpoints of a tenant's audit chain: the head (seq, hash) signed with the deployment's
Ed25519 key (AUDIT_SIGNING_KEYS, core/signing_keys.py), the way transparency logs sign their tree heads.

The chain's rows and its head are in the database, so whoever can write there (the application's
own database user can disable the append-only trigger) can change a row and recompute every later
hash and the head. A checkpoint held outside the database cannot be recomputed without the key:
verified against it, the rewritten chain no longer leads to its hash (docs/security.md).

The bytes signed are the UTF-8 encoding of five lines, each ending in a line feed::

    groundrule-audit-checkpoint/1
    tenant <tenant slug>
    seq <decimal seq>
    hash <64 hex digits: the row's hash, 64 zeros for an empty chain>
    signed_at <UTC, YYYY-MM-DDTHH:MM:SSZ>

and the signature is standard base64 of the 64-byte Ed25519 signature (RFC 8032).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from cryptography.exceptions import InvalidSignature
from django.conf import settings
from django.core.exceptions import ValidationError

from core import signing_keys

from . import chain
from .models import Tenant

HEADER = "groundrule-audit-checkpoint/1"
FIELDS = ("tenant", "seq", "hash", "signed_at", "key_id", "signature")
HASH = re.compile(r"^[0-9a-f]{64}$")
HASH_MESSAGE = "Must be 64 lowercase hex digits."
SIGNED_AT_MESSAGE = "Must be a UTC time written YYYY-MM-DDTHH:MM:SSZ, as the checkpoint was signed."
SIGNATURE_MESSAGE = "Must be the base64 of a 64-byte Ed25519 signature."
SIGNED_AT = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")
SIGNATURE = re.compile(r"^[A-Za-z0-9+/]{86}==$")  # base64 of 64 bytes


class SigningUnavailable(Exception):
    """No AUDIT_SIGNING_KEYS in this deployment: nothing can be signed (verifying still works)."""


def message(*, tenant: str, seq: int, hash: str, signed_at: str) -> bytes:
    return f"{HEADER}\ntenant {tenant}\nseq {seq}\nhash {hash}\nsigned_at {signed_at}\n".encode()


def public_keys() -> list[dict]:
    """Every key a checkpoint may be signed with, the active signer first."""
    ring = settings.AUDIT_KEYS
    return [
        {
            "key_id": key_id,
            "algorithm": "ed25519",
            "public_key": signing_keys.public_b64(key),
            "active": key_id == ring.signer_id,
        }
        for key_id, key in ring.public.items()
    ]


def checkpoint_sign(*, tenant: Tenant, now: datetime | None = None) -> dict:
    """The tenant's current head, signed now with the active key."""
    ring = settings.AUDIT_KEYS
    if ring.signer is None:
        raise SigningUnavailable("Audit checkpoints are not signed in this deployment: set AUDIT_SIGNING_KEYS.")
    head = Tenant.objects.only("slug", "audit_seq", "audit_hash").get(pk=tenant.pk)
    signed_at = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = {"tenant": head.slug, "seq": head.audit_seq, "hash": head.audit_hash or chain.GENESIS}
    signature = ring.signer.sign(message(**fields, signed_at=signed_at))
    return {**fields, "signed_at": signed_at, "key_id": ring.signer_id, "signature": signing_keys.b64(signature)}


def checkpoint_check(data: Mapping, *, tenant: Tenant) -> tuple[int, str]:
    """The (seq, hash) of a checkpoint whose signature is good and whose tenant is ``tenant``;
    ValidationError naming the field that is not."""
    if not isinstance(data, Mapping):
        raise ValidationError({"checkpoint": "A checkpoint is a JSON object with " + ", ".join(FIELDS) + "."})
    missing = [f for f in FIELDS if f not in data]
    if missing:
        raise ValidationError({f: "This field is required." for f in missing})
    errors = {}
    for name in ("tenant", "hash", "signed_at", "key_id", "signature"):
        if not isinstance(data[name], str):
            errors[name] = "Must be a string."
    seq = data["seq"]
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        errors["seq"] = "Must be a whole number, 0 or more."
    if errors:
        raise ValidationError(errors)
    if not HASH.match(data["hash"]):
        errors["hash"] = HASH_MESSAGE
    if not SIGNED_AT.match(data["signed_at"]):
        errors["signed_at"] = SIGNED_AT_MESSAGE
    key = settings.AUDIT_KEYS.public.get(data["key_id"])
    if key is None:
        errors["key_id"] = (
            f"Unknown key id {data['key_id'][:64]!r}: not among this deployment's audit keys "
            "(GET /api/v1/audit-log/keys/)."
        )
    try:
        signature = base64.b64decode(data["signature"], validate=True)
    except (binascii.Error, ValueError):
        signature = b""
    if len(signature) != 64:
        errors["signature"] = SIGNATURE_MESSAGE
    if errors:
        raise ValidationError(errors)
    signed = message(tenant=data["tenant"], seq=seq, hash=data["hash"], signed_at=data["signed_at"])
    try:
        key.verify(signature, signed)
    except InvalidSignature:
        raise ValidationError(
            {"signature": f"The signature does not match this checkpoint under key {data['key_id']!r}."}
        ) from None
    if data["tenant"] != tenant.slug:
        raise ValidationError({"tenant": "This checkpoint was signed for another tenant."})
    return seq, data["hash"]


def checkpoints_check(items: Iterable[Mapping], *, tenant: Tenant) -> dict[int, str]:
    """Several checkpoints (a published file) as seq -> hash; two signed heads that disagree on one
    seq are themselves proof of a rewrite, so they are refused by name."""
    expect: dict[int, str] = {}
    for seq, digest in (checkpoint_check(item, tenant=tenant) for item in items):
        if expect.setdefault(seq, digest) != digest:
            raise ValidationError({"hash": f"Two signed checkpoints give seq {seq} different hashes: a forked chain."})
    return expect
