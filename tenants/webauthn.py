"""Security keys and passkeys (WebAuthn) as a second factor (docs/security-keys.md).

Two ceremonies, each in two steps: the server hands the browser options holding a fresh challenge
(kept in the session, for one answer only, for ``CHALLENGE_TTL``), the browser asks the authenticator
and posts its answer back, and py_webauthn checks it against that challenge, the relying party ID and
the origin. Registration stores the key's public key; an assertion on the second step of a sign-in
proves the person holds it.

A key is a second factor, not a way in: the password is asked first, so a passkey's user
verification is preferred, never required.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http.request import split_domain_port
from django.utils import timezone
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    base64url_to_bytes,
    bytes_to_base64url,
    parse_authentication_credential_json,
    parse_registration_credential_json,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    AuthenticatorTransport,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from . import authenticator, two_factor
from .audit import Actor, audit_person
from .models import RecoveryCode, WebAuthnCredential
from .signals import credentials_changed

log = logging.getLogger(__name__)

RP_NAME = "Groundrule"
CHALLENGE_TTL = timedelta(minutes=5)
TIMEOUT_MS = 60_000
NAME_MAX_LENGTH: int = WebAuthnCredential._meta.get_field("name").max_length or 100
MAX_KEYS = 20

_REGISTRATION = "webauthn_registration"
_AUTHENTICATION = "webauthn_authentication"


class Refused(Exception):
    """A ceremony that did not check out; ``message`` is safe to show, ``field`` names what was wrong."""

    def __init__(self, message: str, *, field: str = "credential", status: int = 400):
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status


class ClonedKey(Refused):
    """The key's signature counter went backwards: two authenticators hold the same private key."""


@dataclass(frozen=True)
class RelyingParty:
    id: str
    origins: list[str]


def relying_party(request) -> RelyingParty:
    """WEBAUTHN_RP_ID / WEBAUTHN_ORIGINS when set, else the host and origin this request came to."""
    host = request.get_host()
    rp_id = settings.WEBAUTHN_RP_ID or split_domain_port(host)[0]
    origins = settings.WEBAUTHN_ORIGINS or [f"{request.scheme}://{host}"]
    return RelyingParty(id=rp_id, origins=list(origins))


def _user_handle(user) -> bytes:
    # The handle a passkey stores for its account: stable and free of personal data (not the email).
    return f"groundrule-user-{user.pk}".encode()


def _transports(names) -> list[AuthenticatorTransport]:
    known = {t.value for t in AuthenticatorTransport}
    return [AuthenticatorTransport(n) for n in names or [] if n in known]


def _descriptors(user) -> list[PublicKeyCredentialDescriptor]:
    # The transports a key said it has let the browser offer the right one (USB, NFC, this device).
    return [
        PublicKeyCredentialDescriptor(id=base64url_to_bytes(c.credential_id), transports=_transports(c.transports))
        for c in WebAuthnCredential.objects.filter(user=user)
    ]


def _keep_challenge(request, key: str, challenge: bytes, user) -> None:
    request.session[key] = {
        "challenge": bytes_to_base64url(challenge),
        "user": user.pk,
        "at": timezone.now().isoformat(),
    }


def _take_challenge(request, key: str, user) -> bytes:
    """The challenge this session was given for ``user``, removed so that it answers once only."""
    data = request.session.pop(key, None)
    if not isinstance(data, dict) or data.get("user") != user.pk:
        raise Refused("No security key request is waiting for this answer: start again.", field="challenge")
    try:
        issued = datetime.fromisoformat(data["at"])
        challenge = base64url_to_bytes(data["challenge"])
    except (KeyError, TypeError, ValueError) as exc:
        raise Refused("The security key request is not readable: start again.", field="challenge") from exc
    if timezone.now() - issued > CHALLENGE_TTL:
        raise Refused("The security key request expired: start again.", field="challenge")
    return challenge


# --- registration -------------------------------------------------------------------------------


def registration_options(request, user) -> str:
    """The JSON for ``navigator.credentials.create()``; keys already registered are excluded."""
    rp = relying_party(request)
    options = generate_registration_options(
        rp_id=rp.id,
        rp_name=RP_NAME,
        user_id=_user_handle(user),
        user_name=user.get_username(),
        timeout=TIMEOUT_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=_descriptors(user),
    )
    _keep_challenge(request, _REGISTRATION, options.challenge, user)
    return options_to_json(options)


def clean_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise Refused("Give the key a name, so you can tell your keys apart.", field="name")
    name = name.strip()
    if len(name) > NAME_MAX_LENGTH:
        raise Refused(f"A key's name is at most {NAME_MAX_LENGTH} characters.", field="name")
    return name


def _as_json(credential) -> str:
    if isinstance(credential, dict):
        return json.dumps(credential)
    if isinstance(credential, str):
        return credential
    raise Refused("The security key's answer is missing.")


def register(request, user, *, name, credential) -> tuple[WebAuthnCredential, list[str]]:
    """Check the authenticator's answer to ``registration_options`` and keep the key. A first second
    factor comes with a set of recovery codes (the answer's list, to show once; empty otherwise)."""
    name = clean_name(name)
    challenge = _take_challenge(request, _REGISTRATION, user)
    if WebAuthnCredential.objects.filter(user=user).count() >= MAX_KEYS:
        raise Refused(f"An account holds at most {MAX_KEYS} security keys: remove one first.", field="name")
    rp = relying_party(request)
    try:
        parsed = parse_registration_credential_json(_as_json(credential))
        verified = verify_registration_response(
            credential=parsed, expected_challenge=challenge, expected_rp_id=rp.id, expected_origin=rp.origins
        )
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise Refused(f"The security key's answer did not check out: {exc}") from exc
    transports = [t.value for t in (parsed.response.transports or [])]
    try:
        with transaction.atomic():
            first = not two_factor.has_second_factor(user)
            key = WebAuthnCredential.objects.create(
                user=user,
                name=name,
                credential_id=bytes_to_base64url(verified.credential_id),
                public_key=verified.credential_public_key,
                sign_count=verified.sign_count,
                transports=transports,
            )
            codes = authenticator.recovery_codes_replace(user) if first else []
            after = {"name": key.name, "transports": transports, "recovery_codes": len(codes)}
            _audit(user, key, "accounts.two_factor.webauthn_added", after=after)
    except IntegrityError as exc:
        raise Refused("This security key is already registered.") from exc
    credentials_changed.send(sender=WebAuthnCredential, user=user, request=request)
    return key, codes


def remove(request, key: WebAuthnCredential) -> None:
    user = key.user
    with transaction.atomic():
        _audit(user, key, "accounts.two_factor.webauthn_removed", before={"name": key.name})
        key.delete()
        if not two_factor.has_second_factor(user):
            # The last second factor gone: its backup goes with it, as when the app is removed.
            RecoveryCode.objects.filter(user=user).delete()
    credentials_changed.send(sender=WebAuthnCredential, user=user, request=request)


def _audit(user, key: WebAuthnCredential, action: str, *, before=None, after=None) -> None:
    # The log is per workspace: the account's change is recorded in each one the person belongs to.
    audit_person(
        user=user,
        action=action,
        actor=Actor(user=user),
        object_type="tenants.webauthncredential",
        object_id=key.pk,
        before=before,
        after=after,
    )


# --- authentication (the second step of a sign-in) ----------------------------------------------


def authentication_options(request, user) -> str:
    """The JSON for ``navigator.credentials.get()``, allowing only this account's keys."""
    rp = relying_party(request)
    options = generate_authentication_options(
        rp_id=rp.id,
        timeout=TIMEOUT_MS,
        allow_credentials=_descriptors(user),
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    _keep_challenge(request, _AUTHENTICATION, options.challenge, user)
    return options_to_json(options)


def authenticate(request, user, *, credential) -> WebAuthnCredential:
    """Check an assertion made for ``authentication_options``; answers the key that made it."""
    challenge = _take_challenge(request, _AUTHENTICATION, user)
    try:
        parsed = parse_authentication_credential_json(_as_json(credential))
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise Refused(f"The security key's answer is not readable: {exc}") from exc
    # Another account's key is refused exactly as an unknown one: its owner stays unnamed.
    key = WebAuthnCredential.objects.filter(user=user, credential_id=parsed.id).first()
    if key is None:
        raise Refused("This security key is not registered to your account.")
    rp = relying_party(request)
    try:
        # The counter is checked below, after the signature, so that a regression is known to come
        # from the key itself (a clone) and not from a forged answer.
        verified = verify_authentication_response(
            credential=parsed,
            expected_challenge=challenge,
            expected_rp_id=rp.id,
            expected_origin=rp.origins,
            credential_public_key=bytes(key.public_key),
            credential_current_sign_count=0,
        )
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise Refused(f"The security key's answer did not check out: {exc}") from exc
    new_count = verified.new_sign_count
    if (new_count or key.sign_count) and new_count <= key.sign_count:
        with transaction.atomic():
            _audit(
                user,
                key,
                "accounts.two_factor.webauthn_cloned",
                after={"name": key.name, "stored_sign_count": key.sign_count, "sign_count": new_count},
            )
        log.warning("Security key %s of user %s: signature counter went back; refused as cloned", key.pk, user.pk)
        raise ClonedKey(
            "This security key's counter went backwards, which a copied key does: it is refused. "
            "Remove it and add your key again, or use another second factor.",
            status=403,
        )
    key.sign_count = new_count
    key.last_used_at = timezone.now()
    key.save(update_fields=["sign_count", "last_used_at"])
    return key
