"""Ed25519 keys that sign audit checkpoints (docs/security.md), read from the deployment's settings.

``AUDIT_SIGNING_KEYS`` is ``"<key id>:<base64 private key>,..."``: the first entry signs, the others
still verify what they signed before a rotation. ``AUDIT_VERIFY_KEYS`` is
``"<key id>:<base64 public key>,..."``: retired keys whose private half is gone from the deployment
and whose checkpoints must still verify. A private key is the 32-byte Ed25519 seed, a public key the
32 raw bytes, both in standard base64 (what ``manage.py audit_signing_key generate`` prints).

Pure (no Django): config/settings.py parses the keys with it at start, so a malformed entry stops
the server with its name rather than failing the first checkpoint.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

KEY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _raw(key: Ed25519PrivateKey | Ed25519PublicKey) -> bytes:
    if isinstance(key, Ed25519PrivateKey):
        return key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def public_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return b64(_raw(public))


@dataclass(frozen=True)
class KeyRing:
    """The active signer (its id and key, None when none is configured) and every public key by id."""

    signer_id: str | None
    signer: Ed25519PrivateKey | None
    public: dict[str, Ed25519PublicKey]


def _entries(setting: str, raw: str):
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        key_id, sep, material = entry.partition(":")
        key_id = key_id.strip()
        if not sep or not KEY_ID.match(key_id):
            raise ValueError(
                f"{setting}: entry starting {entry[:12]!r}… is not '<key id>:<base64 key>' "
                "(a key id is letters, digits, '.', '_' or '-', at most 64)."
            )
        try:
            data = base64.b64decode(material.strip(), validate=True)
        except (binascii.Error, ValueError):
            data = b""
        if len(data) != 32:
            raise ValueError(f"{setting}: the key of {key_id!r} is not 32 bytes of base64 (an Ed25519 key).")
        yield key_id, data


def parse_keys(signing: str, verify: str = "") -> KeyRing:
    """The key ring from the two settings' text; ValueError naming the entry that does not parse."""
    signer_id, signer, public = None, None, {}
    for key_id, data in _entries("AUDIT_SIGNING_KEYS", signing):
        private = Ed25519PrivateKey.from_private_bytes(data)
        if key_id in public:
            raise ValueError(f"AUDIT_SIGNING_KEYS: key id {key_id!r} is listed twice.")
        public[key_id] = private.public_key()
        if signer is None:
            signer_id, signer = key_id, private
    for key_id, data in _entries("AUDIT_VERIFY_KEYS", verify):
        if key_id in public:
            raise ValueError(f"AUDIT_VERIFY_KEYS: key id {key_id!r} is listed twice (or also in AUDIT_SIGNING_KEYS).")
        public[key_id] = Ed25519PublicKey.from_public_bytes(data)
    return KeyRing(signer_id, signer, public)


def generate(key_id: str) -> tuple[str, str]:
    """A new key: its AUDIT_SIGNING_KEYS entry and its AUDIT_VERIFY_KEYS entry."""
    if not KEY_ID.match(key_id):
        raise ValueError("A key id is letters, digits, '.', '_' or '-', at most 64.")
    private = Ed25519PrivateKey.generate()
    return f"{key_id}:{b64(_raw(private))}", f"{key_id}:{public_b64(private)}"
