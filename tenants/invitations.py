"""Invitations: an admin (or a shell) invites an email address with a role; the link's holder joins once.

The token is shown to whoever invited once and sent by email; only its hash is stored. Every write
locks what it checks (the tenant row when inviting, the invitation row when accepting or revoking),
so two tabs or two admins cannot both use or duplicate one invitation.
"""

import logging
import secrets
import smtplib
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from tenants.audit import Actor, audit_record

from .models import Invitation, Membership, Tenant, hash_token
from .services import membership_set, validate_role

logger = logging.getLogger(__name__)

MAX_EMAIL_LENGTH = 254
# token_urlsafe(32) is 43 characters; anything much longer is not one of ours and is not hashed.
MAX_TOKEN_LENGTH = 100


class InvitationRefused(Exception):
    """The link cannot be used. ``reason``: unknown, expired, revoked, accepted, wrong_account,
    already_member or has_account; the accept page words each one."""

    def __init__(self, reason: str, invitation: Invitation | None = None):
        super().__init__(reason)
        self.reason = reason
        self.invitation = invitation


def normalise_email(email) -> str:
    return (email or "").strip().lower() if isinstance(email, str) else ""


def clean_email(email) -> str:
    email = normalise_email(email)
    if not email:
        raise ValidationError({"email": "This field is required."})
    if len(email) > MAX_EMAIL_LENGTH:
        raise ValidationError({"email": f"At most {MAX_EMAIL_LENGTH} characters."})
    try:
        validate_email(email)
    except ValidationError:
        raise ValidationError({"email": "Enter a valid email address."}) from None
    return email


def accounts_for_email(email: str) -> list:
    """The accounts an email names: the one whose username it is (how invited people and
    ``create_tenant --admin-email`` sign up), and any that give it as their email."""
    users = get_user_model().objects.filter(Q(username__iexact=email) | Q(email__iexact=email)).order_by("pk")
    return list(users[:10])


def _pending(queryset):
    return queryset.filter(accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now())


def pending_invitations(*, tenant: Tenant):
    return _pending(Invitation.objects.filter(tenant=tenant)).select_related("created_by").order_by("-created_at")


def _audit_after(invitation: Invitation) -> dict:
    return {"email": invitation.email, "role": invitation.role, "expires_at": invitation.expires_at.isoformat()}


def invitation_create(*, tenant: Tenant, email: str, role: str, actor: Actor) -> tuple[Invitation, str]:
    """Returns the invitation and its raw token, which is never stored and cannot be shown again."""
    validate_role(role)
    email = clean_email(email)
    with transaction.atomic():
        # Serialises invitations to this tenant: the duplicate check below cannot race.
        Tenant.objects.select_for_update().only("id").get(pk=tenant.pk)
        members = Membership.objects.with_scopes_disabled().filter(tenant=tenant, user__in=accounts_for_email(email))
        if members.exists():
            raise ValidationError({"email": f"{email} is already a member of this workspace."})
        if _pending(Invitation.objects.with_scopes_disabled().filter(tenant=tenant, email=email)).exists():
            raise ValidationError(
                {"email": f"An invitation to {email} is already pending; revoke it to send a new one."}
            )
        raw = secrets.token_urlsafe(32)
        invitation = Invitation.objects.create(
            tenant=tenant,
            email=email,
            role=role,
            token_hash=hash_token(raw),
            created_by=actor.user,
            expires_at=timezone.now() + timedelta(hours=settings.INVITATION_TTL_HOURS),
        )
        audit_record(
            tenant=tenant,
            action="tenants.invitation.created",
            actor=actor,
            obj=invitation,
            after=_audit_after(invitation),
        )
    return invitation, raw


def invitation_revoke(*, invitation: Invitation, actor: Actor) -> Invitation:
    with transaction.atomic():
        invitation = Invitation.objects.with_scopes_disabled().select_for_update().get(pk=invitation.pk)
        if invitation.accepted_at is not None:
            raise ValidationError(f"{invitation.email} already accepted this invitation; remove the member instead.")
        if invitation.revoked_at is None:
            invitation.revoked_at = timezone.now()
            invitation.save(update_fields=["revoked_at"])
            audit_record(
                tenant=invitation.tenant,
                action="tenants.invitation.revoked",
                actor=actor,
                obj=invitation,
                before={**_audit_after(invitation), "revoked": False},
                after={**_audit_after(invitation), "revoked": True},
            )
    return invitation


def invitation_for_token(token) -> Invitation | None:
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    return (
        Invitation.objects.with_scopes_disabled()
        .select_related("tenant", "created_by")
        .filter(token_hash=hash_token(token))
    ).first()


def refusal(invitation: Invitation | None) -> str | None:
    """Why a link cannot be used by anyone, or None while it is pending."""
    if invitation is None:
        return "unknown"
    if invitation.accepted_at is not None:
        return "accepted"
    if invitation.revoked_at is not None:
        return "revoked"
    if invitation.is_expired:
        return "expired"
    return None


def _lock_pending(token: str) -> Invitation:
    invitation = invitation_for_token(token)
    if invitation is not None:
        invitation = (
            Invitation.objects.with_scopes_disabled().select_for_update().select_related("tenant").get(pk=invitation.pk)
        )
    reason = refusal(invitation)
    if reason:
        raise InvitationRefused(reason, invitation)
    return invitation


def _accept(invitation: Invitation, user) -> Membership:
    actor = Actor(user=user)
    membership = membership_set(tenant=invitation.tenant, user=user, role=invitation.role, actor=actor)
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    audit_record(
        tenant=invitation.tenant,
        action="tenants.invitation.accepted",
        actor=actor,
        obj=invitation,
        after={**_audit_after(invitation), "user": user.get_username()},
    )
    return membership


@transaction.atomic
def invitation_accept_new_account(*, token: str, password: str):
    """A new account for the invited email, with ``password``, a member with the invited role.

    All or nothing: a password the validators refuse, or a membership that fails, leaves no account.
    """
    invitation = _lock_pending(token)
    if accounts_for_email(invitation.email):
        raise InvitationRefused("has_account", invitation)
    User = get_user_model()
    user = User(username=invitation.email, email=invitation.email)
    try:
        password_validation.validate_password(password, user=user)
    except ValidationError as exc:
        raise ValidationError({"password": exc.messages}) from None
    user.set_password(password)
    user.save()
    _accept(invitation, user)
    return user


@transaction.atomic
def invitation_accept(*, token: str, user) -> Membership:
    """``user``, an account of the invited email, joins the tenant with the invited role."""
    invitation = _lock_pending(token)
    if user.pk not in {u.pk for u in accounts_for_email(invitation.email)}:
        raise InvitationRefused("wrong_account", invitation)
    if Membership.objects.with_scopes_disabled().filter(tenant=invitation.tenant, user=user).exists():
        raise InvitationRefused("already_member", invitation)
    return _accept(invitation, user)


def invitations_accept_for_email(*, email: str, user) -> list[Membership]:
    """Every pending invitation to ``email`` that ``user`` is not yet a member through, accepted: for
    a sign-in whose email the identity provider verified, which proves what the link's email proves.
    Runs inside the caller's transaction; each invitation row is locked as when a link is used."""
    email = normalise_email(email)
    locked = (
        _pending(Invitation.objects.with_scopes_disabled().filter(email=email))
        .select_for_update()
        .select_related("tenant")
        .order_by("pk")
    )
    joined = []
    for invitation in locked:
        if Membership.objects.with_scopes_disabled().filter(tenant=invitation.tenant, user=user).exists():
            continue  # left pending: an admin sees it and can revoke it
        joined.append(_accept(invitation, user))
    return joined


def pending_invitation_tenants(email: str) -> list[Tenant]:
    ids = _pending(Invitation.objects.with_scopes_disabled().filter(email=normalise_email(email))).values("tenant_id")
    return list(Tenant.objects.filter(pk__in=ids).order_by("pk"))


def invitation_url(token: str, *, base: str) -> str:
    return base.rstrip("/") + reverse("invitation_accept", args=[token])


def invitation_send(*, invitation: Invitation, link: str, inviter: str) -> str | None:
    """Email the link. Returns None when sent, else what went wrong (the link was shown anyway, so
    the person who invited can pass it on). Neither the link nor the token is logged."""
    tenant = invitation.tenant
    # A header cannot hold a line break (a name given to create_tenant might): one line, always.
    name = " ".join(tenant.name.split())
    expires = timezone.localtime(invitation.expires_at).strftime("%Y-%m-%d %H:%M %Z")
    body = (
        f"{inviter} invited you to the workspace “{name}” on Groundrule, as {invitation.role}.\n\n"
        f"Open this link to accept. It works once, until {expires}:\n\n{link}\n\n"
        "If you did not expect this invitation, you can ignore this email.\n"
    )
    try:
        send_mail(f"You are invited to {name} on Groundrule", body, None, [invitation.email])
    except (smtplib.SMTPException, OSError) as exc:
        logger.warning("Invitation email to %s (tenant %s) not sent: %s", invitation.email, tenant.slug, exc)
        return f"{type(exc).__name__}: {exc}"
    return None
