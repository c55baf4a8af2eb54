"""Sign-in throttling wired into Django's authentication (tenants/login_throttle.py says what it counts).

The backend is Django's own model backend with one step before it: for a paused account and address
it refuses before any password is checked, so a guess made during a pause learns nothing. Failures
and successes are counted from Django's own signals, which every sign-in form sends. Calls without a
request (the shell, management commands, the test client's ``login``) have no client to throttle.
"""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver

from core.client_address import client_address

from . import login_throttle

# Set on a request whose sign-in was refused by a lock: the middleware answers it with 429.
LOCKED_UNTIL_ATTR = "sign_in_locked_until"


class LoginThrottleBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if settings.OIDC_ONLY:
            return None  # passwords are off (docs/sso.md): no form or API path can check one
        if request is not None:
            until = login_throttle.locked_until(username=username, address=client_address(request))
            if until is not None:
                setattr(request, LOCKED_UNTIL_ATTR, until)
                raise PermissionDenied  # authenticate() stops here and reports a failure
        return super().authenticate(request, username=username, password=password, **kwargs)


@receiver(user_login_failed, dispatch_uid="tenants.login_throttle.failed")
def _count_failure(sender, credentials, request=None, **kwargs):
    if request is None or getattr(request, LOCKED_UNTIL_ATTR, None) is not None:
        return  # refused by a lock: not counted, so it cannot extend it
    until = login_throttle.record_failure(username=credentials.get("username"), address=client_address(request))
    if until is not None:  # this failure reached a limit: say so now rather than on the next try
        setattr(request, LOCKED_UNTIL_ATTR, until)


@receiver(user_logged_in, dispatch_uid="tenants.login_throttle.succeeded")
def _clear_on_success(sender, request, user, **kwargs):
    if request is None:
        return
    login_throttle.record_success(username=user.get_username(), address=client_address(request))
