"""Enrolling an authenticator app and signing in with it, as the two-factor tests need."""

import re
from datetime import timedelta
from importlib import import_module

import pyotp
from django.conf import settings
from django.test import Client
from django.utils import timezone

from tenants import authenticator, two_factor

PASSWORD = "correct-horse-battery"
ADDR = "203.0.113.9"


class Clock:
    """Moves Django's notion of now, which both the authenticator codes and the throttle read."""

    def __init__(self, monkeypatch):
        self.now = timezone.now()
        monkeypatch.setattr(timezone, "now", lambda: self.now)

    def advance(self, **delta):
        self.now += timedelta(**delta)


def code_at(secret: str, clock: Clock | None = None, *, steps: int = 0) -> str:
    moment = (clock.now if clock else timezone.now()).timestamp()
    return pyotp.TOTP(secret).at(moment + 30 * steps)


def enrol(user) -> tuple[str, list[str]]:
    """An authenticator app set up and confirmed through the service; answers (secret, recovery codes)."""
    secret = authenticator.secret_of(authenticator.totp_begin(user=user))
    codes = authenticator.totp_confirm(user=user, code=code_at(secret))
    assert codes is not None
    return secret, codes


def password_step(client: Client, username: str = "alice", *, next_url: str = "", password: str = PASSWORD):
    data = {"username": username, "password": password}
    if next_url:
        data["next"] = next_url
    return client.post("/accounts/login/", data, REMOTE_ADDR=ADDR)


def submit_code(client: Client, code: str):
    return client.post("/accounts/two-factor/", {"code": code}, REMOTE_ADDR=ADDR)


def submit_recovery_code(client: Client, code: str):
    return client.post("/accounts/two-factor/recovery/", {"recovery_code": code}, REMOTE_ADDR=ADDR)


def signed_in_as(client: Client):
    return client.session.get("_auth_user_id")


def shown_secret(page: str) -> str:
    match = re.search(r'data-testid="totp-secret">([A-Z2-7 ]+)<', page)
    assert match, "no secret on the page"
    return match.group(1).replace(" ", "")


def leave_unconfirmed(client: Client, *, minutes: int = 11) -> None:
    """Moves this session's last sign-in or "confirm it's you" back ``minutes`` (past REAUTHENTICATE's
    10 by default), as for a screen left signed in: changing second factors then asks again."""
    session = client.session
    session[two_factor.CONFIRMED_AT_KEY] = (timezone.now() - timedelta(minutes=minutes)).isoformat()
    session.save()


def leave_browser_unconfirmed(page, *, minutes: int = 11) -> None:
    """``leave_unconfirmed`` for a Playwright page's session, found by its cookie."""
    key = next(c["value"] for c in page.context.cookies() if c["name"] == settings.SESSION_COOKIE_NAME)
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
    session[two_factor.CONFIRMED_AT_KEY] = (timezone.now() - timedelta(minutes=minutes)).isoformat()
    session.save()
