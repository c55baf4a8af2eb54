"""The second step of a sign-in, shared by every second factor (docs/two-factor.md).

A password that checks out for an account with a second factor does not sign in: ``begin`` keeps
who is half signed in (the account, the backend that checked it, where to go next) in the session,
under a fresh session key, and the second-factor page asks for an authenticator code, a recovery code
or a security key. Whichever method checks the second factor calls ``complete``, which signs in.
A pending sign-in lasts ``PENDING_TTL``: a stolen password alone cannot hold one open.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.utils import timezone

PENDING_KEY = "two_factor_pending"
PENDING_TTL = timedelta(minutes=5)
# How this session signed in, for the require-2FA rule: "sso" when the identity provider vouched for
# the second factor (OIDC_TRUSTS_MFA), else the second factor's method (set by ``complete``).
METHOD_KEY = "two_factor_method"
SSO_TRUSTED = "sso"
# How the first factor was given, before the second step.
PASSWORD = "password"
SSO = "sso"

# When this session last proved who is at the keyboard: a sign-in, or "confirm it's you"
# (tenants/pages/reauthenticate.py). Changing second factors needs one within REAUTHENTICATE.
CONFIRMED_AT_KEY = "confirmed_at"

TOTP = "totp"
RECOVERY_CODE = "recovery_code"
WEBAUTHN = "webauthn"


@dataclass(frozen=True)
class PendingSignIn:
    user: object
    backend: str
    next_url: str
    first_step: str = PASSWORD


def enrolled_methods(user) -> list[str]:
    """The second factors this account can sign in with, strongest first (recovery codes last)."""
    from .models import RecoveryCode, TotpDevice, WebAuthnCredential

    methods = []
    if WebAuthnCredential.objects.filter(user=user).exists():
        methods.append(WEBAUTHN)
    if TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).exists():
        methods.append(TOTP)
    if methods and RecoveryCode.objects.filter(user=user, used_at__isnull=True).exists():
        methods.append(RECOVERY_CODE)
    return methods


def has_second_factor(user) -> bool:
    """An account has a second factor once an authenticator app or a security key is enrolled."""
    return any(m != RECOVERY_CODE for m in enrolled_methods(user))


def begin(request, user, *, backend: str, next_url: str, first_step: str = PASSWORD) -> None:
    """Half sign-in: remember ``user`` for the second step without signing them in.

    ``first_step`` (PASSWORD or SSO) is how the first factor was given: the sessions list
    shows both steps (tenants/models.py, SignInMethod)."""
    request.session.cycle_key()  # the anonymous session's key is not the one that finishes
    request.session[PENDING_KEY] = {
        "user": user.pk,
        "backend": backend,
        "next": next_url or settings.LOGIN_REDIRECT_URL,
        "first": first_step,
        "at": timezone.now().isoformat(),
    }


def pending(request) -> PendingSignIn | None:
    """Who is half signed in on this session, or None (never begun, expired, or the account gone)."""
    data = request.session.get(PENDING_KEY)
    if not isinstance(data, dict):
        return None
    try:
        started = datetime.fromisoformat(data["at"])
    except (KeyError, TypeError, ValueError):
        return None
    if timezone.now() - started > PENDING_TTL:
        request.session.pop(PENDING_KEY, None)
        return None
    user = get_user_model().objects.filter(pk=data.get("user"), is_active=True).first()
    if user is None:
        return None
    first = SSO if data.get("first") == SSO else PASSWORD
    return PendingSignIn(user=user, backend=data["backend"], next_url=data["next"], first_step=first)


def cancel(request) -> None:
    request.session.pop(PENDING_KEY, None)


def complete(request, sign_in: PendingSignIn, *, method: str) -> str:
    """The second factor checked out: sign in and answer where to go next.

    ``login`` rotates the session key again and sends Django's signal, so the sign-in throttle
    clears the account's failures as it does after a password alone.
    """
    request.session.pop(PENDING_KEY, None)
    login(request, sign_in.user, backend=sign_in.backend)
    # After single sign-on the method is noted with its first step ("sso_totp"), as the sessions list
    # names it; the require-2FA rule reads only whether it is the provider's own ("sso").
    request.session[METHOD_KEY] = method if sign_in.first_step == PASSWORD else f"{SSO}_{method}"
    return sign_in.next_url


@receiver(user_logged_in, dispatch_uid="tenants.two_factor.signed_in")
def _forget_previous_method(sender, request, user, **kwargs):
    # Django keeps the session's data when the same person signs in again: how they signed in last
    # time must not vouch for this sign-in (``complete`` and ``mark_sso_trusted`` note it afresh).
    if request is not None and hasattr(request, "session"):
        request.session.pop(METHOD_KEY, None)
        mark_confirmed(request)  # a fresh sign-in is a confirmation (docs/two-factor.md)


def mark_confirmed(request) -> None:
    request.session[CONFIRMED_AT_KEY] = timezone.now().isoformat()


def recently_confirmed(request) -> bool:
    """Whether this session signed in or confirmed it is the person within REAUTHENTICATE."""
    try:
        at = datetime.fromisoformat(request.session.get(CONFIRMED_AT_KEY, ""))
    except (TypeError, ValueError):
        return False
    return timedelta(0) <= timezone.now() - at <= settings.REAUTHENTICATE


def mark_sso_trusted(request) -> None:
    """After ``login``: this session's second factor was the identity provider's (OIDC_TRUSTS_MFA)."""
    request.session[METHOD_KEY] = SSO_TRUSTED


def enrolment_required_by(request) -> list:
    """The workspaces that make this signed-in person enrol a second factor before anything else.

    Any of their workspaces that requires it counts, not only the current one: a session can switch
    workspaces, and one that requires it should not be reachable by switching from one that does not.
    A sign-in through single sign-on counts as two-factor while OIDC_TRUSTS_MFA says the identity
    provider enforces it.
    """
    requiring = [m.tenant for m in getattr(request, "memberships", None) or [] if m.tenant.require_two_factor]
    if not requiring:
        return []
    if settings.OIDC_TRUSTS_MFA and request.session.get(METHOD_KEY) == SSO_TRUSTED:
        return []
    return [] if has_second_factor(request.user) else requiring
