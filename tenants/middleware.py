import math

from django.shortcuts import render
from django_scopes import scope

from . import login_throttle
from .login_backends import LOCKED_UNTIL_ATTR
from .models import Membership

SESSION_TENANT_KEY = "tenant_id"


class TenantScopeMiddleware:
    """For dashboard pages: picks the signed-in user's current tenant and scopes every query to it.

    API requests are scoped by their key instead (governance.api.base), so /api/ passes through.
    Anonymous requests get no scope at all: a tenant-owned query there raises instead of leaking.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.tenant = None
        request.membership = None
        if request.path.startswith("/api/") or not request.user.is_authenticated:
            return self.get_response(request)
        memberships = list(
            Membership.objects.with_scopes_disabled()
            .filter(user=request.user)
            .select_related("tenant")
            .order_by("tenant__name")
        )
        request.memberships = memberships
        if not memberships:
            return self.get_response(request)
        wanted = request.session.get(SESSION_TENANT_KEY)
        current = next((m for m in memberships if m.tenant_id == wanted), memberships[0])
        request.tenant, request.membership = current.tenant, current
        with scope(tenant=current.tenant):
            return self.get_response(request)


class SignInLockMiddleware:
    """Answers a sign-in that a lock refused with the 429 page (tenants/login_backends.py sets the mark).

    The form alone would say "wrong password", which is untrue and invites more tries.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        until = getattr(request, LOCKED_UNTIL_ATTR, None)
        if until is None:
            return response
        retry_after = login_throttle.retry_after_seconds(until)
        locked = render(
            request, "registration/locked_out.html", {"retry_after_minutes": math.ceil(retry_after / 60)}, status=429
        )
        locked["Retry-After"] = str(retry_after)
        return locked
