"""Encryption of tenant secrets at rest (Fernet: AES-128-CBC + HMAC-SHA256).

GOVERNANCE_SECRETS_KEY may hold several comma-separated keys: the first encrypts, all decrypt,
so a key can be rotated without re-encrypting every row at once.
"""

import base64
import hashlib
import hmac
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


def _fernet_for(material: str) -> Fernet:
    try:
        return Fernet(material.encode())
    except (ValueError, TypeError):
        # Any passphrase works: derive a proper 32-byte key from it.
        digest = hashlib.sha256(material.encode()).digest()
        return Fernet(base64.urlsafe_b64encode(digest))


def _keys(configured: str, secret_key: str) -> list[str]:
    return [k.strip() for k in configured.split(",") if k.strip()] or ["derived:" + secret_key]


@lru_cache(maxsize=4)
def _cipher(configured: str, secret_key: str) -> MultiFernet:
    return MultiFernet([_fernet_for(k) for k in _keys(configured, secret_key)])


def cipher() -> MultiFernet:
    return _cipher(settings.GOVERNANCE_SECRETS_KEY, settings.SECRET_KEY)


def keyed_digests(message: str) -> list[str]:
    """HMAC-SHA256 of ``message`` under each configured key, the one that writes first: for a short
    secret stored only to be recognised (a recovery code), which a plain hash would leave open to a
    search by anyone holding a copy of the table. Match against all; store the first."""
    keys = _keys(settings.GOVERNANCE_SECRETS_KEY, settings.SECRET_KEY)
    return [hmac.new(k.encode(), message.encode(), hashlib.sha256).hexdigest() for k in keys]


def encrypt(plaintext: str) -> str:
    return cipher().encrypt(plaintext.encode()).decode()


class SecretUnreadable(Exception):
    """The ciphertext was written with a key that is no longer configured."""


def decrypt(ciphertext: str) -> str:
    try:
        return cipher().decrypt(ciphertext.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("secret was encrypted with a key that is not configured") from exc


def mask(value: str) -> str:
    """A hint that recognises a value without revealing it: at most its last four characters."""
    if len(value) <= 8:
        return "•" * 4
    return "•" * 4 + value[-4:]
