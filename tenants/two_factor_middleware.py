"""A workspace's "require two-factor authentication" rule (docs/two-factor.md, "Requiring it").

A signed-in member without a second factor is sent to the account security page from every dashboard
page until they enrol one. They may still use their own account pages (``/account/``: the
authenticator app, security keys, sessions) and sign out. API requests authenticate with keys, not
people, and pass through untouched, as do the health, metrics and trace endpoints.
"""

from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from . import two_factor

ALLOWED_PREFIXES = ("/account/", "/accounts/logout/", "/static/", "/api/", "/v1/", "/healthz", "/readyz", "/metrics")


class TwoFactorRequiredMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (
            request.user.is_authenticated
            and not request.path.startswith(ALLOWED_PREFIXES)
            and two_factor.enrolment_required_by(request)
        ):
            target = reverse("account_security")
            if getattr(request, "htmx", False):
                response = HttpResponse(status=204)
                response["HX-Redirect"] = target
                return response
            return redirect(target)
        return self.get_response(request)
