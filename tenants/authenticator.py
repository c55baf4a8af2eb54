"""An authenticator app (TOTP) and recovery codes: enrolment, checking, removal and an admin's reset
(docs/two-factor.md). tenants/two_factor.py holds the second step of a sign-in that uses them.

- The shared secret is stored encrypted (tenants/crypto.py) and shown only while the app is being set
  up; a code is accepted from the step before to the step after now (clocks drift), and never twice:
  ``last_used_step`` moves forward with a conditional UPDATE, so two requests racing with one code
  cannot both win.
- Recovery codes are ten single-use codes of ten Crockford base-32 characters (50 bits each), shown
  once and stored as HMAC-SHA256 hashes keyed with GOVERNANCE_SECRETS_KEY. A new set replaces the old one.
- Every enrolment, removal, regeneration, use of a recovery code and reset is written to the audit log
  of each workspace the person belongs to (the log is per workspace), and enrolment, removal,
  regeneration and reset send ``credentials_changed`` so the person's other sessions end.
"""

from __future__ import annotations

import hmac
import io
import secrets

import pyotp
import qrcode
import qrcode.image.svg
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import crypto
from .audit import Actor, audit_person, audit_record
from .models import Membership, RecoveryCode, Role, Tenant, TotpDevice, WebAuthnCredential
from .signals import credentials_changed

ISSUER = "Groundrule"
STEP_SECONDS = 30
VALID_WINDOW = 1  # steps either side of now: an authenticator a little fast or slow still works
RECOVERY_CODE_COUNT = 10
# Crockford's base 32: no I, L, O or U, so a code read aloud or copied by hand survives.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_LOOKALIKES = str.maketrans({"o": "0", "i": "1", "l": "1"})


class AlreadyEnrolled(Exception):
    """The account already has a confirmed authenticator app: remove it before setting up another."""


# --- audit ---------------------------------------------------------------------------------------


def _audit(*, user, action: str, actor: Actor, after: dict) -> None:
    """One row in each workspace the person belongs to: each workspace's admins see it in their log."""
    audit_person(user=user, action=action, actor=actor, after=after)


# --- the authenticator app ---------------------------------------------------------------------------


def totp_begin(*, user) -> TotpDevice:
    """A fresh, unconfirmed authenticator for ``user`` (any earlier unconfirmed one is dropped)."""
    with transaction.atomic():
        if TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).exists():
            raise AlreadyEnrolled
        TotpDevice.objects.filter(user=user).delete()
        return TotpDevice.objects.create(user=user, secret_ciphertext=crypto.encrypt(pyotp.random_base32()))


def totp_device(user) -> TotpDevice | None:
    """The account's authenticator app in use (confirmed), if any."""
    return TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).first()


def pending_device(user) -> TotpDevice | None:
    return TotpDevice.objects.filter(user=user, confirmed_at__isnull=True).first()


def secret_of(device: TotpDevice) -> str:
    return crypto.decrypt(device.secret_ciphertext)


def secret_grouped(secret: str) -> str:
    """The secret in groups of four, as a person types it into an app."""
    return " ".join(secret[i : i + 4] for i in range(0, len(secret), 4))


def provisioning_uri(device: TotpDevice) -> str:
    return pyotp.TOTP(secret_of(device)).provisioning_uri(name=device.user.get_username(), issuer_name=ISSUER)


def qr_svg(text: str) -> str:
    """An inline SVG QR code (no raster image library needed)."""
    image = qrcode.make(text, image_factory=qrcode.image.svg.SvgPathImage, box_size=8, border=2)
    out = io.BytesIO()
    image.save(out)
    svg = out.getvalue().decode()
    return svg[svg.index("<svg") :]  # without the XML declaration, which is not allowed inside HTML


def normalise_code(text: str) -> str:
    return "".join(text.split())


def is_code_shaped(code: str) -> bool:
    """Six ASCII digits. Not ``str.isdigit``: other scripts' digits are digits to Python, and
    ``hmac.compare_digest`` raises on anything but ASCII."""
    return len(code) == 6 and code.isascii() and code.isdigit()


def _matching_step(secret: str, code: str, now: float) -> int | None:
    if not is_code_shaped(code):
        return None  # a password typed where a code or the password is asked for, or no code at all
    totp = pyotp.TOTP(secret)
    current = int(now) // STEP_SECONDS
    for step in range(current - VALID_WINDOW, current + VALID_WINDOW + 1):
        if hmac.compare_digest(totp.generate_otp(step), code):
            return step
    return None


def _accept(device: TotpDevice, code: str) -> bool:
    """The code is right for now and newer than the last one accepted; records its step."""
    step = _matching_step(secret_of(device), normalise_code(code), timezone.now().timestamp())
    if step is None:
        return False
    newer = Q(last_used_step__isnull=True) | Q(last_used_step__lt=step)
    if TotpDevice.objects.filter(newer, pk=device.pk).update(last_used_step=step) != 1:
        return False  # this code (or a later one) was already used: a replay
    device.last_used_step = step
    return True


def totp_verify(*, user, code: str) -> bool:
    """A current code of the account's confirmed authenticator, not used before."""
    device = totp_device(user)
    return device is not None and _accept(device, code)


def totp_confirm(*, user, code: str, request=None) -> list[str] | None:
    """The first code from the newly set-up app: the app is in use, and here are the recovery codes
    (to show once). None when the code is wrong or nothing is being set up."""
    device = pending_device(user)
    if device is None or not _accept(device, code):
        return None
    with transaction.atomic():
        device.confirmed_at = timezone.now()
        device.save(update_fields=["confirmed_at"])
        codes = recovery_codes_replace(user)
        _audit(
            user=user,
            action="accounts.two_factor.enrolled",
            actor=Actor(user=user),
            after={"method": "totp", "recovery_codes": len(codes)},
        )
    credentials_changed.send(sender=TotpDevice, user=user, request=request)
    return codes


def totp_remove(*, user, request=None) -> bool:
    """Removes the authenticator app; with no security key left, the recovery codes go too."""
    with transaction.atomic():
        deleted, _ = TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).delete()
        if not deleted:
            return False
        if not WebAuthnCredential.objects.filter(user=user).exists():
            RecoveryCode.objects.filter(user=user).delete()
        _audit(user=user, action="accounts.two_factor.removed", actor=Actor(user=user), after={"method": "totp"})
    credentials_changed.send(sender=TotpDevice, user=user, request=request)
    return True


# --- recovery codes ------------------------------------------------------------------------------------


def _recovery_digests(user, code: str) -> list[str]:
    # Keyed with GOVERNANCE_SECRETS_KEY (each configured key, the current first): a code is 50 bits,
    # which a plain hash would let a copy of the table alone search.
    return crypto.keyed_digests(f"groundrule-recovery:{user.pk}:{code}")


def normalise_recovery_code(text: str) -> str:
    """What a person typed, as stored: no spaces or dashes, lower case, look-alike letters read as digits."""
    return "".join(c for c in text.lower() if c not in " -\t\r\n").translate(_LOOKALIKES)


def is_recovery_code_shaped(text: str) -> bool:
    code = normalise_recovery_code(text)
    return len(code) == 10 and all(c in _ALPHABET for c in code)


def recovery_codes_replace(user) -> list[str]:
    """A new set of codes in place of any old one, unaudited: for the enrolment of a first second
    factor (call it inside that enrolment's transaction and audit the enrolment), or for
    ``recovery_codes_regenerate``. Show the answer once (account/recovery_codes.html)."""
    RecoveryCode.objects.filter(user=user).delete()
    codes = []
    for _ in range(RECOVERY_CODE_COUNT):
        raw = "".join(secrets.choice(_ALPHABET) for _ in range(10))
        codes.append(f"{raw[:5]}-{raw[5:]}")
    RecoveryCode.objects.bulk_create(
        [RecoveryCode(user=user, code_hash=_recovery_digests(user, normalise_recovery_code(c))[0]) for c in codes]
    )
    return codes


def recovery_codes_left(user) -> int:
    return RecoveryCode.objects.filter(user=user, used_at__isnull=True).count()


def recovery_codes_regenerate(*, user, request=None) -> list[str]:
    """A new set of codes (the old ones stop working), to show once."""
    with transaction.atomic():
        codes = recovery_codes_replace(user)
        _audit(
            user=user,
            action="accounts.two_factor.recovery_codes_regenerated",
            actor=Actor(user=user),
            after={"recovery_codes": len(codes)},
        )
    credentials_changed.send(sender=RecoveryCode, user=user, request=request)
    return codes


def recovery_code_use(*, user, code: str) -> bool:
    """Spends one unused recovery code; False if it is not one (or was used already)."""
    if not is_recovery_code_shaped(code):
        return False
    digests = _recovery_digests(user, normalise_recovery_code(code))
    with transaction.atomic():
        spent = RecoveryCode.objects.filter(user=user, code_hash__in=digests, used_at__isnull=True).update(
            used_at=timezone.now()
        )
        if spent != 1:
            return False
        _audit(
            user=user,
            action="accounts.two_factor.recovery_code_used",
            actor=Actor(user=user),
            after={"recovery_codes_left": recovery_codes_left(user)},
        )
    return True


# --- an admin's reset --------------------------------------------------------------------------------


RESET_ELSEWHERE = (
    "{name} also belongs to a workspace where you are not an admin, so resetting their second factors is "
    "not yours alone to decide. Ask a server administrator (manage.py reset_two_factor)."
)


RESET_SELF = (
    "You cannot reset your own second factors here: remove them on Account security, which asks for a "
    "code or your password."
)
RESET_SUPERUSER = (
    "{name} is a server administrator, whose account guards every workspace: only another server "
    "administrator or the server's operator can reset their second factors (manage.py reset_two_factor)."
)


def reset_refusal(*, actor, member) -> str | None:
    """Why ``actor`` may not reset ``member``'s second factors, or None if they may.

    Nobody resets their own: that would step around the code or password that removing a factor on
    Account security asks for (someone at a screen left signed in). A tenant admin may reset only
    people all of whose workspaces they administer, and no superuser: otherwise an admin of one
    workspace could weaken an account that guards another one."""
    if actor.pk == member.pk:
        return RESET_SELF
    if actor.is_superuser:
        return None
    if member.is_superuser:
        return RESET_SUPERUSER.format(name=member.get_username())
    administered = Membership.objects.with_scopes_disabled().filter(user=actor, role=Role.ADMIN).values("tenant_id")
    if Membership.objects.with_scopes_disabled().filter(user=member).exclude(tenant_id__in=administered).exists():
        return RESET_ELSEWHERE.format(name=member.get_username())
    return None


def two_factor_reset(*, member, actor: Actor) -> dict[str, int]:
    """Deletes every second factor of ``member`` (app, recovery codes, security keys); audited in each
    of their workspaces. Answers how many of each were removed."""
    with transaction.atomic():
        removed = {
            "totp": TotpDevice.objects.filter(user=member).delete()[0],
            "recovery_codes": RecoveryCode.objects.filter(user=member).delete()[0],
            "webauthn": WebAuthnCredential.objects.filter(user=member).delete()[0],
        }
        _audit(user=member, action="accounts.two_factor.reset", actor=actor, after={"removed": removed})
    # No session of the member's made this change: all of theirs end.
    credentials_changed.send(sender=TotpDevice, user=member, request=None)
    return removed


# --- a workspace's rule --------------------------------------------------------------------------------


def tenant_set_require_two_factor(*, tenant: Tenant, required: bool, actor: Actor) -> Tenant:
    """Turns the workspace's require-2FA rule on or off (tenants/two_factor_middleware.py enforces it)."""
    with transaction.atomic():
        before = tenant.require_two_factor
        if before == required:
            return tenant
        tenant.require_two_factor = required
        tenant.save(update_fields=["require_two_factor"])
        audit_record(
            tenant=tenant,
            action="tenants.tenant.require_two_factor_changed",
            actor=actor,
            obj=tenant,
            before={"require_two_factor": before},
            after={"require_two_factor": required},
        )
    return tenant
