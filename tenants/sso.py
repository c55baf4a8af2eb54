"""Which account a person verified by the identity provider gets (tenants/oidc.py verifies them).

- An existing account whose username or email is the verified email (case-insensitive) is that
  person's. Two such accounts: refused, since either could be the wrong one.
- Pending invitations to that email are accepted on the way in, for a new account and an existing
  one alike: the provider's verified email proves what an invitation link's email proves.
- No account: one is made (with no usable password) when an invitation is pending or the email's
  domain is in OIDC_ALLOWED_DOMAINS (then with no workspace: the welcome page says to ask for an
  invitation). Tenant roles come only from invitations.
- Anyone else is refused.

Audit: the log is per tenant. A sign-in is recorded (``accounts.sso.signed_in``) in each workspace
the person belongs to afterwards; a refusal (``accounts.sso.refused``) in each workspace of the
account the verified email names, or that has invited it. A refusal before the ID token's signature
checked out names nobody we can believe, and one for a person no workspace knows belongs to no
tenant: those are logged as warnings (logger ``tenants.sso``), with the reason, and nowhere else.
"""

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from . import invitations
from .audit import Actor, audit_record
from .models import Membership, Tenant
from .oidc import Identity, Refused

log = logging.getLogger(__name__)


def _tenants_of(users) -> list[Tenant]:
    ids = Membership.objects.with_scopes_disabled().filter(user__in=users).values("tenant_id")
    return list(Tenant.objects.filter(pk__in=ids).order_by("pk"))


def _domain_allowed(email: str) -> bool:
    return email.rpartition("@")[2] in settings.OIDC_ALLOWED_DOMAINS


@transaction.atomic
def sign_in(identity: Identity):
    """The account for this verified person, made or joined as the rules above say; all or nothing.
    Returns (user, created)."""
    email = identity.email
    accounts = invitations.accounts_for_email(email)
    if len(accounts) > 1:
        raise Refused(
            "ambiguous_email",
            f"More than one account here uses {email}, so single sign-on cannot tell which is yours. "
            "Ask an admin to give each account its own email.",
            claims=identity.claims,
        )
    created = False
    if accounts:
        user = accounts[0]
        if not user.is_active:
            raise Refused("inactive", f"The account for {email} is deactivated.", claims=identity.claims)
    elif invitations.pending_invitation_tenants(email) or _domain_allowed(email):
        User = get_user_model()
        user = User(username=email, email=email)
        user.set_unusable_password()
        user.save()
        created = True
    else:
        raise Refused(
            "unknown_person",
            f"No account or invitation for {email}. Ask an admin of your workspace to invite you.",
            claims=identity.claims,
        )
    invitations.invitations_accept_for_email(email=email, user=user)
    actor = Actor(user=user)
    for tenant in _tenants_of([user]):
        audit_record(
            tenant=tenant,
            action="accounts.sso.signed_in",
            actor=actor,
            object_type="auth.user",
            object_id=user.pk,
            after={"email": email, "issuer": identity.issuer, "subject": identity.subject, "account_created": created},
        )
    log.info("SSO sign-in: %s (sub %s, account created: %s)", email, identity.subject, created)
    return user, created


def record_refusal(refusal: Refused) -> int:
    """Audits a refusal where it belongs (the module docstring says where); returns how many
    workspaces recorded it. Runs in its own transaction, after the sign-in's was rolled back."""
    claims = refusal.claims or {}
    email = invitations.normalise_email(claims.get("email"))
    tenants: dict[int, Tenant] = {}
    if email:
        for tenant in _tenants_of(invitations.accounts_for_email(email)) + invitations.pending_invitation_tenants(
            email
        ):
            tenants[tenant.pk] = tenant
    after = {
        "reason": refusal.reason,
        "email": email,
        "issuer": claims.get("iss", ""),
        "subject": claims.get("sub", ""),
    }
    with transaction.atomic():
        for tenant in tenants.values():
            audit_record(
                tenant=tenant,
                action="accounts.sso.refused",
                actor=Actor.system(f"sso:{email}"),
                object_type="auth.sso",
                after=after,
            )
    if not tenants:
        log.warning(
            "SSO sign-in refused (%s) for %s: %s", refusal.reason, email or "an unverified person", refusal.message
        )
    return len(tenants)
