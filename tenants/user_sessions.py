"""A person's signed-in sessions: recorded at sign-in, refreshed as they are used, ended on request
(docs/sign-in.md, "Signed-in sessions").

Each UserSession row stands beside one of Django's database sessions. The browser's own session holds
the row's id (``ROW_KEY``), so the row follows the session through every key rotation (Django rotates
it at sign-in and on a password change), and the row holds that session's key, encrypted, only to end
it. A row is shown while its Django session exists, has not expired and still carries the account's
current password hash (sessions a password change elsewhere has already shut out are not listed).

Ending a session deletes Django's session row: that browser is signed out on its next request. A
session whose row is gone signs out at its next refresh too, so none lives on unlisted.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.dispatch import receiver
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from core.client_address import client_address

from . import crypto, two_factor, user_agents
from .models import SignInMethod, UserSession
from .signals import credentials_changed

log = logging.getLogger(__name__)

ROW_KEY = "user_session_id"
SEEN_KEY = "user_session_seen_at"
# How stale "last seen" may get: a busy session writes its row (and its session) at most this often.
SEEN_EVERY = timedelta(minutes=1)
# On the request that signed in: the id of the row recorded for it.
SIGNED_IN_ATTR = "signed_in_session_id"

# How a session signed in, by the page that signed it in; a second factor that finished it says so instead.
SIGN_IN_PAGES = {
    "login": SignInMethod.PASSWORD,
    "oidc_callback": SignInMethod.SSO,
    "invitation_accept": SignInMethod.INVITATION,
}


class CurrentSessionRefused(Exception):
    """The session asked to be ended is the one asking: that is signing out."""


def _now_stamp() -> float:
    return timezone.now().timestamp()


def _fields_from(request) -> dict:
    agent = request.META.get("HTTP_USER_AGENT", "")[:300]
    return {
        "user_agent": agent,
        "browser": user_agents.describe(agent)[:100],
        "address": client_address(request)[:45],
    }


def _method_of(request) -> str:
    # A second factor that finishes this sign-in is noted only after Django's signal (session_touch
    # records it); one in the session now is the previous sign-in's.
    match = getattr(request, "resolver_match", None)
    return SIGN_IN_PAGES.get(match.url_name, "") if match else ""


def session_record(*, request, user) -> UserSession:
    """The session of ``request`` has just signed in as ``user``: list it."""
    session = request.session
    if session.session_key is None:  # login() saves the rotated session; this is only a safety net
        session.save()
    previous = session.get(ROW_KEY)
    if previous is not None:  # signed in again over a signed-in session: it is the same browser
        UserSession.objects.filter(pk=previous, user=user).delete()
    row = UserSession.objects.create(
        user=user,
        session_key_ciphertext=crypto.encrypt(session.session_key),
        sign_in_method=_method_of(request),
        **_fields_from(request),
    )
    session[ROW_KEY] = row.pk
    session[SEEN_KEY] = _now_stamp()
    setattr(request, SIGNED_IN_ATTR, row.pk)
    _pin_expiry(session, session.get_expiry_date())
    return row


def _pin_expiry(session, at) -> None:
    # Django moves a session's expiry to SESSION_COOKIE_AGE from each save, and the refresh saves it
    # once a minute: pinned, a session still lasts that long from its sign-in, not from its last use.
    if at is not None and not session.get_expire_at_browser_close():
        session.set_expiry(at)


def session_touch(request) -> None:
    """Refresh the current session's row (last seen, address, key) if it is older than SEEN_EVERY.

    Called after every response; costs nothing for a session without a signed-in user and nothing
    but the session read (which the request made anyway) while the row is fresh, as it is from sign-in.
    """
    session = getattr(request, "session", None)
    if session is None or session.session_key is None or session.get(SESSION_KEY) is None:
        return
    signed_in_now = getattr(request, SIGNED_IN_ATTR, None)
    if signed_in_now is not None:
        # This request signed in; a second factor that finished it is noted in the session after
        # Django's signal, so it is recorded here.
        method = session.get(two_factor.METHOD_KEY)
        if method in SignInMethod.values:
            UserSession.objects.filter(pk=signed_in_now).update(sign_in_method=method)
        return
    seen = session.get(SEEN_KEY)
    if isinstance(seen, (int, float)) and _now_stamp() - seen < SEEN_EVERY.total_seconds():
        return
    user = request.user
    if not user.is_authenticated:
        return
    fields = {
        **_fields_from(request),
        "last_seen_at": timezone.now(),
        "session_key_ciphertext": crypto.encrypt(session.session_key),
    }
    row_id = session.get(ROW_KEY)
    if row_id is None:
        # Signed in before sessions were listed: list it from now on, ending when it would have.
        row = UserSession.objects.create(user=user, **fields)
        session[ROW_KEY] = row.pk
        stored = Session.objects.filter(session_key=session.session_key).values_list("expire_date", flat=True)
        _pin_expiry(session, stored.first())
    elif not UserSession.objects.filter(pk=row_id, user=user).update(**fields):
        # Its row is gone, so the session was ended: while this request ran, or with a key that could
        # no longer be read to delete it. Either way it signs out here rather than live on unlisted.
        session.flush()
        return
    session[SEEN_KEY] = _now_stamp()


def _key_of(row: UserSession) -> str | None:
    try:
        return crypto.decrypt(row.session_key_ciphertext)
    except crypto.SecretUnreadable:
        log.warning("user session %s: its key was encrypted with a key no longer configured", row.pk)
        return None


def _rekey_current(request) -> int | None:
    """The current session's row id, its stored key brought up to date (a key rotation moves it)."""
    row_id = request.session.get(ROW_KEY)
    if row_id is None or request.session.session_key is None:
        return None
    UserSession.objects.filter(pk=row_id, user=request.user).update(
        session_key_ciphertext=crypto.encrypt(request.session.session_key)
    )
    return row_id


def _live(user, rows: list[UserSession]) -> tuple[list[UserSession], list[UserSession]]:
    """Split rows into those whose Django session still signs ``user`` in, and the rest."""
    keys = {row.pk: _key_of(row) for row in rows}
    sessions = {
        s.session_key: s
        for s in Session.objects.filter(session_key__in=[k for k in keys.values() if k], expire_date__gt=timezone.now())
    }
    password_hash = user.get_session_auth_hash()
    live, dead = [], []
    for row in rows:
        session = sessions.get(keys[row.pk] or "")
        data = SessionStore().decode(session.session_data) if session else {}
        signed_in = str(data.get(SESSION_KEY)) == str(user.pk) and constant_time_compare(
            data.get(HASH_SESSION_KEY, ""), password_hash
        )
        (live if signed_in else dead).append(row)
    return live, dead


def sessions_of(request) -> tuple[list[UserSession], int | None]:
    """The signed-in user's live sessions, most recently used first, and the current one's id.

    Rows whose session has expired, was signed out or was shut out by a password change are
    deleted here as well as by the daily pass: nobody else reads them.
    """
    current = request.session.get(ROW_KEY)
    rows = list(UserSession.objects.filter(user=request.user))
    mine = [row for row in rows if row.pk == current]
    if mine and _key_of(mine[0]) != request.session.session_key:
        _rekey_current(request)  # rotated since its last refresh: ending it from elsewhere needs the new key
    live, dead = _live(request.user, [row for row in rows if row.pk != current])
    if dead:
        UserSession.objects.filter(pk__in=[row.pk for row in dead]).delete()
    live.sort(key=lambda row: -row.last_seen_at.timestamp())
    return mine + live, current if mine else None


def _end(rows) -> int:
    ended = 0
    for row in rows:
        key = _key_of(row)
        if key:
            SessionStore(session_key=key).delete()
        ended += 1
    UserSession.objects.filter(pk__in=[row.pk for row in rows]).delete()
    return ended


def session_end(*, request, session_id: int) -> UserSession:
    """End one of the signed-in user's other sessions; another person's session id is a 404."""
    row = get_object_or_404(UserSession, pk=session_id, user=request.user)
    if row.pk == request.session.get(ROW_KEY):
        raise CurrentSessionRefused
    _end([row])
    return row


def sessions_end_others(*, user, request=None) -> int:
    """End every session of ``user`` but ``request``'s own (all of them when request is None)."""
    current = _rekey_current(request) if request is not None and getattr(request, "user", None) == user else None
    return _end(list(UserSession.objects.filter(user=user).exclude(pk=current)))


def clear_expired() -> int:
    """Rows of sessions that have certainly expired, for the daily retention pass.

    A session lasts SESSION_COOKIE_AGE from its sign-in, or at most from its last save, and a session
    saved was seen within SEEN_EVERY; rows of people who never open the list would otherwise stay.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.SESSION_COOKIE_AGE) - SEEN_EVERY
    return UserSession.objects.filter(last_seen_at__lte=cutoff).delete()[0]


@receiver(user_logged_in, dispatch_uid="tenants.user_sessions.signed_in")
def _on_sign_in(sender, request, user, **kwargs):
    if request is not None and hasattr(request, "session"):
        session_record(request=request, user=user)


@receiver(user_logged_out, dispatch_uid="tenants.user_sessions.signed_out")
def _on_sign_out(sender, request, user, **kwargs):
    if request is not None and hasattr(request, "session"):
        row_id = request.session.get(ROW_KEY)
        if row_id is not None:
            UserSession.objects.filter(pk=row_id).delete()


@receiver(credentials_changed, dispatch_uid="tenants.user_sessions.credentials_changed")
def _on_credentials_changed(sender, user, request=None, **kwargs):
    sessions_end_others(user=user, request=request)
