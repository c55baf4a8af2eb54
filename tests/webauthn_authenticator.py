"""A software WebAuthn authenticator for the tests: an ES256 key, "none" attestation, a signature
counter, and the browser's clientDataJSON — what a security key and the browser send together, built
from the specification with cryptography and cbor2 (py_webauthn's own dependencies)."""

import hashlib
import json
import os
import struct

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url

UP, UV, AT = 0x01, 0x04, 0x40


class SoftAuthenticator:
    def __init__(self, *, origin: str = "http://testserver", rp_id: str = "testserver"):
        self.origin = origin
        self.rp_id = rp_id
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.sign_count = 0

    @property
    def id(self) -> str:
        return bytes_to_base64url(self.credential_id)

    def _cose_public_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})

    def _client_data(self, kind: str, challenge: str, origin: str | None) -> bytes:
        return json.dumps(
            {"type": kind, "challenge": challenge, "origin": origin or self.origin, "crossOrigin": False}
        ).encode()

    def _rp_hash(self, rp_id: str | None) -> bytes:
        return hashlib.sha256((rp_id or self.rp_id).encode()).digest()

    def create(self, options: dict, *, origin: str | None = None, rp_id: str | None = None) -> dict:
        """The answer to navigator.credentials.create(), as webauthn.js posts it."""
        auth_data = (
            self._rp_hash(rp_id or options["rp"]["id"])
            + bytes([UP | UV | AT])
            + struct.pack(">I", self.sign_count)
            + bytes(16)
            + struct.pack(">H", len(self.credential_id))
            + self.credential_id
            + self._cose_public_key()
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        client_data = self._client_data("webauthn.create", options["challenge"], origin)
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": bytes_to_base64url(client_data),
                "attestationObject": bytes_to_base64url(attestation),
                "transports": ["usb"],
            },
            "clientExtensionResults": {},
        }

    def get(self, options: dict, *, origin: str | None = None, count: int | None = None) -> dict:
        """The answer to navigator.credentials.get(); ``count`` forces the signature counter (a clone)."""
        self.sign_count = self.sign_count + 1 if count is None else count
        auth_data = self._rp_hash(options.get("rpId")) + bytes([UP | UV]) + struct.pack(">I", self.sign_count)
        client_data = self._client_data("webauthn.get", options["challenge"], origin)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": bytes_to_base64url(client_data),
                "authenticatorData": bytes_to_base64url(auth_data),
                "signature": bytes_to_base64url(signature),
            },
            "clientExtensionResults": {},
        }


def challenge_bytes(options: dict) -> bytes:
    return base64url_to_bytes(options["challenge"])
