"""Inviting people from Settings > Members, revoking an invitation, and the page its link opens."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from tenants import invitations, oidc
from tenants.access import invitation_for
from tenants.audit import Actor
from tenants.middleware import SESSION_TENANT_KEY
from tenants.models import Membership, Role
from tenants.permissions import require_role

from .forms import InviteForm, MemberAddForm, SetPasswordForm
from .oidc import sso_context
from .views import _toast, member_context


def public_base_url(request) -> str:
    """Where links point: PUBLIC_URL when set (what people open behind a proxy), else this request's host."""
    return settings.PUBLIC_URL or request.build_absolute_uri("/").rstrip("/")


@require_role(Role.ADMIN)
@require_POST
def invite(request):
    form = InviteForm(request.POST)
    link = sent_error = invitation = None
    if form.is_valid():
        try:
            invitation, token = invitations.invitation_create(
                tenant=request.tenant,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                actor=Actor.from_request(request),
            )
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            link = invitations.invitation_url(token, base=public_base_url(request))
            sent_error = invitations.invitation_send(
                invitation=invitation, link=link, inviter=request.user.get_username()
            )
            form = InviteForm()
    context = member_context(request, MemberAddForm(), form)
    context.update({"new_invitation": invitation, "invitation_link": link, "sent_error": sent_error})
    # The link is on this one response only: only its hash is stored, and the page is not cached.
    response = render(request, "settings/members.html", context, status=400 if form.errors else 200)
    add_never_cache_headers(response)
    return response


@require_role(Role.ADMIN)
@require_POST
def invitation_revoke(request, pk):
    invitation = invitation_for(request.tenant, pk)
    try:
        invitations.invitation_revoke(invitation=invitation, actor=Actor.from_request(request))
    except ValidationError as exc:
        text, ok = " ".join(exc.messages), False
    else:
        text, ok = f"Invitation for {invitation.email} revoked. Its link no longer works.", True
    if request.htmx:
        response = _toast(HttpResponse(""), text, "success" if ok else "error")
        if not ok:
            response["HX-Reswap"] = "none"
        return response
    (messages.success if ok else messages.error)(request, text)
    return redirect("settings_members")


# --- the page the link opens --------------------------------------------------------------------

# A link we never issued is not found; one that existed and is spent is gone; the wrong account is
# refused. Each with a page that says what to do next.
REFUSED_STATUS = {"unknown": 404, "expired": 410, "revoked": 410, "accepted": 410, "wrong_account": 403}


def _refused(request, reason: str, invitation=None):
    response = render(
        request,
        "onboarding/invitation_refused.html",
        {"reason": reason, "invitation": invitation, "ttl_hours": settings.INVITATION_TTL_HOURS},
        status=REFUSED_STATUS.get(reason, 200),
    )
    add_never_cache_headers(response)
    return response


def _joined(request, membership: Membership):
    request.session[SESSION_TENANT_KEY] = membership.tenant_id
    messages.success(request, f"Welcome to {membership.tenant.name}. You joined as {membership.role}.")
    return redirect("overview")


@never_cache
@require_http_methods(["GET", "POST"])
def invitation_accept(request, token):
    invitation = invitations.invitation_for_token(token)
    reason = invitations.refusal(invitation)
    if reason:
        return _refused(request, reason, invitation)
    context = {"invitation": invitation, "tenant": invitation.tenant}
    accounts = invitations.accounts_for_email(invitation.email)

    if request.user.is_authenticated:
        if request.method == "POST":
            try:
                membership = invitations.invitation_accept(token=token, user=request.user)
            except invitations.InvitationRefused as exc:
                return _refused(request, exc.reason, exc.invitation)
            return _joined(request, membership)
        if request.user.pk not in {u.pk for u in accounts}:
            return _refused(request, "wrong_account", invitation)
        if Membership.objects.with_scopes_disabled().filter(tenant=invitation.tenant, user=request.user).exists():
            return _refused(request, "already_member", invitation)
        return render(request, "onboarding/invitation_join.html", context)

    if oidc.configured():
        # Single sign-on accepts every pending invitation to the email the provider verified, so it
        # lands in the workspace rather than back on this (by then used) link.
        sso = sso_context(request, "")
        context.update(sso_url=sso["sso_url"], sso_name=sso["sso_name"])
    if accounts:
        # Someone with an account signs in as usual (throttled, as every sign-in), then comes back here.
        if not settings.OIDC_ONLY:
            context["sign_in_url"] = redirect_to_login(request.get_full_path()).url
        return render(request, "onboarding/invitation_join.html", context)
    if settings.OIDC_ONLY:  # no password to choose: single sign-on is the only way in
        return render(
            request, "onboarding/invitation_join.html", context, status=403 if request.method == "POST" else 200
        )
    form = SetPasswordForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = invitations.invitation_accept_new_account(token=token, password=form.cleaned_data["password"])
        except invitations.InvitationRefused as exc:
            if exc.reason == "has_account":
                return redirect_to_login(request.get_full_path())
            return _refused(request, exc.reason, exc.invitation)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            login(request, user)  # the one backend; the invitation stood in for a password
            membership = (
                Membership.objects.with_scopes_disabled()
                .select_related("tenant")
                .get(tenant=invitation.tenant, user=user)
            )
            return _joined(request, membership)
    context["form"] = form
    return render(request, "onboarding/invitation_signup.html", context, status=400 if form.errors else 200)
