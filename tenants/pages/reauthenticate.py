"""Asking who is at the keyboard before a change that weakens sign-in (removing the authenticator app
or a security key, printing new recovery codes): a current authenticator code or the password
(docs/two-factor.md, "New recovery codes, removing the app")."""

from django.conf import settings
from django.http import HttpResponse

from core.client_address import client_address
from tenants import authenticator, login_throttle
from tenants.login_backends import LOCKED_UNTIL_ATTR


def locked(request, until) -> HttpResponse:
    # SignInLockMiddleware turns this mark into the 429 page passwords get.
    setattr(request, LOCKED_UNTIL_ATTR, until)
    return HttpResponse(status=429)


def _password_counts(user) -> bool:
    # With OIDC_ONLY no password is checked anywhere (docs/sso.md): one left from before is no proof.
    return not settings.OIDC_ONLY and user.has_usable_password()


def can_reauthenticate(user) -> bool:
    """Whether ``reauthenticated`` has anything to ask: an account signed in only through single
    sign-on, with security keys and no app, has neither a password nor a code to give."""
    return _password_counts(user) or authenticator.totp_device(user) is not None


def reauthenticated(request, form, field: str = "confirmation") -> HttpResponse | bool:
    """A current authenticator code or the password; a wrong one counts as a failed sign-in, so a
    screen left signed in cannot be used to guess the password. Answers True, False (the form then
    carries the error) or the 429 answer of a paused sign-in."""
    user = request.user
    keys = {"username": user.get_username(), "address": client_address(request)}
    until = login_throttle.locked_until(**keys)
    if until is not None:
        return locked(request, until)
    text = form.cleaned_data[field]
    if authenticator.totp_verify(user=user, code=text) or (_password_counts(user) and user.check_password(text)):
        return True
    until = login_throttle.record_failure(**keys)
    if until is not None:
        return locked(request, until)
    form.add_error(field, "That is neither a current authenticator code nor your password.")
    return False
