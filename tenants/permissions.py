"""Who may do what on the dashboard, by role in the current tenant.

Roles are ordered: an admin may do everything a reviewer may, a reviewer everything a viewer may.
Pages check on the server with ``@require_role``; templates use the ``has_role`` filter
(``{% load permissions %}``) only to hide controls a user could not use anyway.
"""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect

from .models import Role

NO_TENANT = "You are not a member of any workspace yet."
RANK = {Role.VIEWER: 1, Role.REVIEWER: 2, Role.ADMIN: 3}


def has_role(membership, role: str) -> bool:
    """True if the membership's role is ``role`` or above it. No membership has no role."""
    if membership is None:
        return False
    if role not in RANK:
        raise ValueError(f"Unknown role: {role!r}")
    return RANK.get(membership.role, 0) >= RANK[role]


def require_role(role: str = Role.VIEWER):
    """Views: sign-in required, then at least ``role`` in the current tenant, else 403.

    ``@require_role()`` alone admits any member. A signed-in user who belongs to no tenant has
    nothing to see: a page they open sends them to the welcome page (create a first workspace, or
    ask for an invitation); anything else is a 403 saying so.
    """
    if role not in RANK:
        raise ValueError(f"Unknown role: {role!r}")

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if getattr(request, "membership", None) is None and not getattr(request, "memberships", None):
                if request.method in ("GET", "HEAD") and not getattr(request, "htmx", False):
                    return redirect("welcome")
                raise PermissionDenied(NO_TENANT)
            if not has_role(getattr(request, "membership", None), role):
                raise PermissionDenied(_refusal(role))
            return view(request, *args, **kwargs)

        wrapped.required_role = role
        return wrapped

    return decorator


def require_role_for_post(role: str):
    """Any member may read (GET/HEAD); other methods need ``role``. For pages that read and write."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            needed = Role.VIEWER if request.method in ("GET", "HEAD") else role
            return require_role(needed)(view)(request, *args, **kwargs)

        return wrapped

    return decorator


def _refusal(role: str) -> str:
    if role == Role.VIEWER:
        return "You are not a member of this tenant."
    return f"This needs the {role} role in this tenant."
