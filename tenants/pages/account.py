"""A person's own security page: their second factors and their signed-in sessions.

Each section is its own template (``account/_*.html``) filled by its own context function, so the
authenticator app, security keys and sessions each live with their own code.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .sessions import sessions_context


def security_context(request) -> dict:
    """What every section of the security page needs; sections add theirs here."""
    context: dict = {}
    context.update(sessions_context(request))
    return context


@login_required
@require_GET
def security(request):
    return render(request, "account/security.html", security_context(request))
