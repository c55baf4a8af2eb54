"""Login throttling for the dashboard: django-axes counts failed sign-ins per username and IP.

Axes refuses an ``authenticate()`` without a request. Only the sign-in form is exposed to
guessing, and it always passes its request; calls without one (the shell, management commands,
the test client's ``login``) have no client to throttle, so they skip straight to the next backend.
"""

from axes.backends import AxesStandaloneBackend


class LoginThrottleBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
