"""A person's own security page: their second factors and their signed-in sessions.

Each section is its own template (``account/_*.html``) filled by its own context function, so the
authenticator app, security keys and sessions each live with their own code.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .sessions import sessions_context
from .two_factor_context import two_factor_context
from .webauthn import webauthn_context


def security_context(request) -> dict:
    """What every section of the security page needs; sections add theirs here."""
    return {
        **two_factor_context(request),
        **webauthn_context(request),
        **sessions_context(request),
    }


@login_required
@require_GET
def security(request):
    return render(request, "account/security.html", security_context(request))
