"""Keeps "last seen" on the list of signed-in sessions current (tenants/user_sessions.py)."""

from . import user_sessions


class SessionActivityMiddleware:
    """After each response, refreshes the session's row at most once a minute.

    After, not before: a sign-in finished by a second factor is then recorded with it, and a request
    that signed out leaves nothing to refresh. The session read it needs is one the request made anyway.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user_sessions.session_touch(request)
        return response
