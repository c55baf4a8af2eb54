"""Settings > secrets, API keys and members; and switching the current tenant.

Secrets and API keys are admin-only, reading included: their names and usage already say a lot
about a tenant's setup. Members may be read by every member; only admins change them.
"""

import json
import re

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from tenants import invitations, services
from tenants.access import api_key_for, membership_for, secret_for
from tenants.audit import Actor
from tenants.middleware import SESSION_TENANT_KEY
from tenants.models import ApiKey, Membership, Role, TenantSecret
from tenants.permissions import has_role, require_role

from .connect import connect_context
from .forms import (
    KNOWN_SECRET_NAMES,
    ApiKeyForm,
    InviteForm,
    MemberAddForm,
    MemberRoleForm,
    SecretForm,
)
from .two_factor_context import members_two_factor_context


def _toast(response: HttpResponse, text: str, level: str = "success") -> HttpResponse:
    response["HX-Trigger"] = json.dumps({"toast": {"message": text, "level": level}})
    return response


# --- tenant switch ------------------------------------------------------------------------------

# After a switch, an object page of the old tenant would be a 404: go to its list instead.
_OBJECT_PATH = re.compile(r"^(/[^/]+/)\d+/")


@login_required
@require_POST
def tenant_switch(request):
    wanted = request.POST.get("tenant", "")
    membership = next((m for m in getattr(request, "memberships", []) if str(m.tenant_id) == wanted), None)
    if membership is None:
        # Not one of this user's tenants: indistinguishable from a tenant that does not exist.
        raise Http404("No such tenant.")
    request.session[SESSION_TENANT_KEY] = membership.tenant_id
    messages.info(request, f"Switched to {membership.tenant.name}.")
    target = request.POST.get("next") or "/"
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = "/"
    target = target.split("?", 1)[0]
    if match := _OBJECT_PATH.match(target):
        target = match.group(1)
    return redirect(target)


# --- secrets ------------------------------------------------------------------------------------


@require_role(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def secrets(request):
    if request.method == "POST":
        form = SecretForm(request.POST)
        if form.is_valid():
            try:
                secret = services.secret_set(
                    tenant=request.tenant,
                    name=form.cleaned_data["name"],
                    value=form.cleaned_data["value"],
                    actor=Actor.from_request(request),
                )
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                messages.success(request, f"Secret {secret.name} saved.")
                return redirect("settings_secrets")
    else:
        form = SecretForm(initial={"name": request.GET.get("replace", "")[:64]})
    rows = (
        TenantSecret.objects.filter(tenant=request.tenant)
        .only("name", "hint", "created_at", "updated_at")
        .order_by("name")
    )
    response = render(
        request,
        "settings/secrets.html",
        {
            "form": form,
            "secrets": rows,
            "known_names": KNOWN_SECRET_NAMES,
            "replacing": request.GET.get("replace", ""),
        },
        status=400 if form.errors else 200,
    )
    add_never_cache_headers(response)
    return response


@require_role(Role.ADMIN)
@require_POST
def secret_delete(request, name):
    secret = secret_for(request.tenant, name)
    services.secret_delete(secret=secret, actor=Actor.from_request(request))
    text = f"Secret {name} deleted."
    if request.htmx:
        return _toast(HttpResponse(""), text)
    messages.success(request, text)
    return redirect("settings_secrets")


# --- API keys -----------------------------------------------------------------------------------


def _api_key_rows(tenant):
    return ApiKey.objects.filter(tenant=tenant).select_related("created_by").order_by("revoked_at", "-created_at")


@require_role(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def api_keys(request):
    new_key = raw_key = None
    form = ApiKeyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            new_key, raw_key = services.api_key_create(
                tenant=request.tenant,
                name=form.cleaned_data["name"],
                scope=form.cleaned_data["scope"],
                agents=form.cleaned_agents(),
                expires_in_days=form.cleaned_data["expires_in_days"],
                actor=Actor.from_request(request),
            )
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            form = ApiKeyForm()
    # The raw key is on this one response only: it is never stored, and the page is not cached.
    keys = list(_api_key_rows(request.tenant))
    response = render(
        request,
        "settings/api_keys.html",
        {
            "form": form,
            "keys": keys,
            "new_key": new_key,
            "raw_key": raw_key,
            "legacy_count": sum(1 for k in keys if k.is_legacy and k.is_active),
            # How to use the new key, shown with it this once (config/templates/connect/_key.html).
            **(connect_context(request, key=new_key, raw_key=raw_key) if raw_key else {}),
        },
        status=400 if form.errors else 200,
    )
    add_never_cache_headers(response)
    return response


@require_role(Role.ADMIN)
@require_POST
def api_key_revoke(request, pk):
    key = api_key_for(request.tenant, pk)
    key = services.api_key_revoke(key=key, actor=Actor.from_request(request))
    text = f"API key “{key.name}” revoked. Agents using it now get 401."
    if request.htmx:
        row = _api_key_rows(request.tenant).get(pk=key.pk)
        return _toast(render(request, "settings/api_keys.html#key-row", {"key": row}), text)
    messages.success(request, text)
    return redirect("settings_api_keys")


# --- members ------------------------------------------------------------------------------------


def member_context(request, add_form, invite_form=None):
    rows = list(Membership.objects.filter(tenant=request.tenant).select_related("user").order_by("user__username"))
    can_admin = has_role(request.membership, Role.ADMIN)
    return {
        "members": rows,
        "admin_count": sum(1 for m in rows if m.role == Role.ADMIN),
        "add_form": add_form,
        "invite_form": invite_form or InviteForm(),
        # Who was invited, and by whom, is the admins' business: the list is theirs only.
        "invitations": list(invitations.pending_invitations(tenant=request.tenant)) if can_admin else [],
        "roles": Role.choices,
        "can_admin": can_admin,
        **members_two_factor_context(rows),
    }


def _find_user(text: str):
    text = text.strip()
    if not text:
        return None
    users = get_user_model().objects.filter(Q(username=text) | Q(email__iexact=text), is_active=True)
    matches = list(users[:2])
    exact = [u for u in matches if u.get_username() == text]
    if exact:
        return exact[0]
    # An email two accounts share names nobody in particular.
    return matches[0] if len(matches) == 1 else None


@require_role()
@require_http_methods(["GET", "POST"])
def members(request):
    form = MemberAddForm()
    if request.method == "POST":
        if not has_role(request.membership, Role.ADMIN):
            raise PermissionDenied("This needs the admin role in this tenant.")
        form = MemberAddForm(request.POST)
        if form.is_valid():
            user = _find_user(form.cleaned_data["user"])
            if user is None:
                form.add_error("user", "No account with that username or email.")
            elif Membership.objects.filter(tenant=request.tenant, user=user).exists():
                form.add_error("user", f"{user.get_username()} is already a member; change their role below.")
            else:
                try:
                    services.membership_set(
                        tenant=request.tenant,
                        user=user,
                        role=form.cleaned_data["role"],
                        actor=Actor.from_request(request),
                    )
                except ValidationError as exc:
                    form.add_service_errors(exc)
                else:
                    messages.success(request, f"{user.get_username()} added as {form.cleaned_data['role']}.")
                    return redirect("settings_members")
    return render(request, "settings/members.html", member_context(request, form), status=400 if form.errors else 200)


def _is_last_admin(membership: Membership) -> bool:
    return (
        membership.role == Role.ADMIN
        and Membership.objects.filter(tenant=membership.tenant, role=Role.ADMIN).count() <= 1
    )


@require_role(Role.ADMIN)
@require_POST
def member_role(request, pk):
    membership = membership_for(request.tenant, pk)
    form = MemberRoleForm(request.POST)
    error = None
    if not form.is_valid():
        error = services.ROLE_CHOICE_ERROR
    elif form.cleaned_data["role"] != Role.ADMIN and _is_last_admin(membership):
        error = "A tenant must keep at least one admin."
    if error is None and form.cleaned_data["role"] != membership.role:
        try:
            membership = services.membership_set(
                tenant=request.tenant,
                user=membership.user,
                role=form.cleaned_data["role"],
                actor=Actor.from_request(request),
            )
        except ValidationError as exc:
            error = " ".join(exc.messages)
    text = error or f"{membership.user.get_username()} is now {membership.role}."
    if request.htmx:
        context = member_context(request, None)
        context["member"] = membership_for(request.tenant, membership.pk)
        context["row_error"] = error
        response = render(request, "settings/members.html#member-row", context, status=400 if error else 200)
        return _toast(response, text, "error" if error else "success")
    (messages.error if error else messages.success)(request, text)
    return redirect("settings_members")


@require_role(Role.ADMIN)
@require_POST
def member_remove(request, pk):
    membership = membership_for(request.tenant, pk)
    username = membership.user.get_username()
    removed_self = membership.user_id == request.user.pk
    try:
        services.membership_remove(membership=membership, actor=Actor.from_request(request))
    except ValidationError as exc:
        text, ok = " ".join(exc.messages), False
    else:
        text, ok = f"{username} removed from {request.tenant.name}.", True
    if not ok:
        if request.htmx:
            # 200 with no swap: the row stays, the toast says why.
            response = _toast(HttpResponse(""), text, "error")
            response["HX-Reswap"] = "none"
            return response
        messages.error(request, text)
        return redirect("settings_members")
    if removed_self:
        # No longer a member here: the members page would now be someone else's business.
        messages.success(request, text)
        if request.htmx:
            response = HttpResponse("")
            response["HX-Redirect"] = "/"
            return response
        return redirect("overview")
    if request.htmx:
        return _toast(HttpResponse(""), text)
    messages.success(request, text)
    return redirect("settings_members")
