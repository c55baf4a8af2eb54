"""The "Signed-in sessions" section of the account security page, ending sessions, and the password
change that ends the others (docs/sign-in.md, "Signed-in sessions")."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from core.client_address import client_address
from tenants import login_throttle, user_sessions
from tenants.signals import credentials_changed

from .reauthenticate import locked


def sessions_context(request) -> dict:
    sessions, current = user_sessions.sessions_of(request)
    return {
        "user_sessions": sessions,
        "current_session_id": current,
    }


def _back():
    return redirect("/account/security/#sessions")


@login_required
@require_POST
def session_end(request, session_id: int):
    try:
        ended = user_sessions.session_end(request=request, session_id=session_id)
    except user_sessions.CurrentSessionRefused:
        # The page offers no End button on this row; a hand-made request is told what to do instead.
        messages.error(request, "That is the session you are using: sign out to end it.")
        return _back()
    messages.success(request, f"Session ended: {ended.browser or 'that browser'} is signed out.")
    return _back()


@login_required
@require_POST
def sessions_end_others(request):
    count = user_sessions.sessions_end_others(user=request.user, request=request)
    if count:
        messages.success(request, f"{count} other session{'s' if count != 1 else ''} ended.")
    else:
        messages.info(request, "No other sessions were signed in.")
    return _back()


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's password change, which also ends the account's other sessions and drops them from the list,
    and counts a wrong current password as a failed sign-in.

    Django's session hash check already refuses those sessions on their next request; the signal
    deletes them outright, and this session stays signed in (update_session_auth_hash).
    """

    def _throttle_keys(self) -> dict:
        return {"username": self.request.user.get_username(), "address": client_address(self.request)}

    def post(self, request, *args, **kwargs):
        # A wrong current password counts as a failed sign-in, as on every other form that asks for it
        # (tenants/pages/reauthenticate.py): a screen left signed in is no place to guess it from.
        until = login_throttle.locked_until(**self._throttle_keys())
        if until is not None:
            return locked(request, until)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        if form.has_error("old_password", "password_incorrect"):
            until = login_throttle.record_failure(**self._throttle_keys())
            if until is not None:
                return locked(self.request, until)
        return super().form_invalid(form)

    def form_valid(self, form):
        response = super().form_valid(form)
        credentials_changed.send(sender=type(self), user=form.user, request=self.request)
        return response
