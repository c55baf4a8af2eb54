"""Settings > Members, two-factor parts (docs/two-factor.md): a workspace's require-2FA switch, and an
admin's reset of a member's second factors."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from tenants import authenticator
from tenants.access import membership_for
from tenants.audit import Actor
from tenants.models import Role
from tenants.permissions import require_role

from .forms import MemberAddForm
from .reauthenticate import confirm_first
from .two_factor_forms import RequireTwoFactorForm
from .views import member_context


@require_role(Role.ADMIN)
@require_POST
def require_two_factor(request):
    form = RequireTwoFactorForm(request.POST)
    required = form.is_valid() and form.cleaned_data["require_two_factor"]
    authenticator.tenant_set_require_two_factor(
        tenant=request.tenant, required=required, actor=Actor.from_request(request)
    )
    if required:
        messages.success(
            request, "Two-factor authentication is now required: members without it are sent to set it up."
        )
    else:
        messages.success(request, "Two-factor authentication is no longer required in this workspace.")
    return redirect("settings_members")


@require_role(Role.ADMIN)
@require_POST
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def member_reset(request, pk):
    membership = membership_for(request.tenant, pk)
    member = membership.user
    refusal = authenticator.reset_refusal(actor=request.user, member=member)
    if refusal is not None:
        messages.error(request, refusal)
        return render(request, "settings/members.html", member_context(request, MemberAddForm()), status=403)
    # Stripping a member's second factors weakens their account as removing one's own does: an
    # admin's screen left signed in is asked too (reauthenticate.py).
    asked = confirm_first(request, what=f"reset the second factors of {member.get_username()}")
    if asked is not None:
        return asked
    removed = authenticator.two_factor_reset(member=member, actor=Actor.from_request(request))
    if not any(removed.values()):
        messages.info(request, f"{member.get_username()} had no second factor to reset.")
    else:
        messages.success(
            request,
            f"Second factors of {member.get_username()} reset: they sign in with their password alone "
            "(or are asked to set one up where it is required), and their sessions have ended.",
        )
    return redirect("settings_members")
