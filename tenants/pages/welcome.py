"""Where a signed-in person who belongs to no workspace lands, and where a superuser creates one.

Only superusers create workspaces: a server's operator makes them (`createsuperuser`, then this
page); everyone else joins one through an invitation from its admins.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from tenants import services
from tenants.audit import Actor
from tenants.middleware import SESSION_TENANT_KEY

from .forms import WorkspaceForm


@login_required
@require_http_methods(["GET", "POST"])
def welcome(request):
    first = not getattr(request, "memberships", None)
    if not request.user.is_superuser:
        if not first or request.method == "POST":
            raise PermissionDenied("Only a superuser can create workspaces.")
        return render(request, "onboarding/no_workspace.html", status=200)
    form = WorkspaceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            tenant = services.workspace_create(
                name=form.cleaned_data["name"],
                slug=form.cleaned_data["slug"],
                user=request.user,
                actor=Actor.from_request(request),
            )
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            request.session[SESSION_TENANT_KEY] = tenant.pk
            messages.success(request, f"Workspace {tenant.name} created. You are its admin.")
            return redirect("overview")
    return render(
        request, "onboarding/workspace_new.html", {"form": form, "first": first}, status=400 if form.errors else 200
    )
