"""The views that take a password, an authenticator code or a recovery code mark every POST
parameter sensitive, so an error report (Django's, mailed to ADMINS) never carries one."""

import contextlib

import pytest
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.test import RequestFactory
from django.views.debug import SafeExceptionReporterFilter

from tenants.pages import reauthenticate, two_factor, webauthn

pytestmark = pytest.mark.django_db

VIEWS = [
    (two_factor.sign_in_code, {}),
    (two_factor.sign_in_recovery_code, {}),
    (two_factor.setup, {}),
    (two_factor.recovery_codes_regenerate, {}),
    (two_factor.remove, {}),
    (reauthenticate.confirm, {}),
    (webauthn.remove, {"pk": 999_999}),
]


@pytest.mark.parametrize(("view", "kwargs"), VIEWS, ids=lambda v: getattr(v, "__name__", ""))
def test_codes_and_passwords_are_left_out_of_error_reports(view, kwargs, alice):
    request = RequestFactory().post("/", {"code": "123456", "confirmation": "hunter2", "recovery_code": "abcde-fghij"})
    request.user = alice
    request.session = SessionStore()
    request.membership = None
    request._messages = FallbackStorage(request)
    with contextlib.suppress(Exception):  # a 404 or the like: what matters is how the request was marked
        view(request, **kwargs)
    cleansed = SafeExceptionReporterFilter().get_post_parameters(request)
    assert set(cleansed.values()) == {SafeExceptionReporterFilter.cleansed_substitute}
