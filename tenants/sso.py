"""Which account a person verified by the identity provider gets (tenants/oidc.py verifies them).

- An existing account whose username or email is the verified email (case-insensitive) is that
  person's. Two such accounts: refused, since either could be the wrong one.
- Pending invitations to that email are accepted on the way in, for a new account and an existing
  one alike: the provider's verified email proves what an invitation link's email proves.
- No account: one is made (with no usable password) when an invitation is pending or the email's
  domain is in OIDC_ALLOWED_DOMAINS (then with no workspace: the welcome page says to ask for an
  invitation). Tenant roles come only from invitations.
- With OIDC_GROUPS_CLAIM and OIDC_GROUP_ROLES, the groups the provider lists grant roles in named
  workspaces (and so an account): a missing membership is made, a lower role raised; nothing is
  ever lowered or removed by a group's absence (an admin does that on the Members page).
- Anyone else is refused.

Audit: the log is per tenant. A sign-in is recorded (``accounts.sso.signed_in``) in each workspace
the person belongs to afterwards; a refusal (``accounts.sso.refused``) in each workspace of the
account the verified email names, or that has invited it. A refusal before the ID token's signature
checked out names nobody we can believe, and one for a person no workspace knows belongs to no
tenant: those are logged as warnings (logger ``tenants.sso``), with the reason, and nowhere else.
"""

import logging
import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import checks
from django.core.exceptions import ValidationError
from django.db import transaction

from . import invitations, services
from .audit import Actor, audit_person, audit_record, workspaces_of
from .models import Membership, Role, Tenant
from .oidc import Identity, Refused
from .permissions import RANK

log = logging.getLogger(__name__)


def _domain_allowed(email: str) -> bool:
    return email.rpartition("@")[2] in settings.OIDC_ALLOWED_DOMAINS


@dataclass(frozen=True)
class GroupGrant:
    group: str
    slug: str
    role: str


_GRANT = re.compile(r"^(?P<group>[^=]+)=(?P<slug>[^:=]+):(?P<role>[a-z]+)$")


def group_grants() -> list[GroupGrant]:
    """OIDC_GROUP_ROLES read; ValueError names the entry that is not GROUP=WORKSPACE-SLUG:ROLE."""
    grants = []
    for entry in settings.OIDC_GROUP_ROLES:
        match = _GRANT.match(entry)
        if not match or match["role"] not in Role.values:
            raise ValueError(
                f"OIDC_GROUP_ROLES entry {entry!r} is not GROUP=WORKSPACE-SLUG:ROLE with a role of "
                f"{', '.join(Role.values)}."
            )
        grants.append(GroupGrant(match["group"].strip(), match["slug"].strip(), match["role"]))
    return grants


def check_group_roles(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """OIDC_GROUP_ROLES well formed, and a claim to read groups from (tenants/checks.py registers this)."""
    try:
        group_grants()
    except ValueError as exc:
        return [checks.Error(str(exc), id="groundrule.E101")]
    if settings.OIDC_GROUP_ROLES and not settings.OIDC_GROUPS_CLAIM:
        return [
            checks.Error(
                "OIDC_GROUP_ROLES is set but OIDC_GROUPS_CLAIM, the claim to read groups from, is not.",
                id="groundrule.E102",
            )
        ]
    return []


def _rank(role: str) -> int:
    return RANK[Role(role)]


def _group_roles(claims: dict) -> dict[Tenant, tuple[str, str]]:
    """The workspaces this person's groups grant, each with the highest role granted and the group."""
    if not settings.OIDC_GROUPS_CLAIM:
        return {}
    groups = claims.get(settings.OIDC_GROUPS_CLAIM)
    groups = (
        {groups}
        if isinstance(groups, str)
        else {g for g in groups if isinstance(g, str)}
        if isinstance(groups, list)
        else set()
    )
    wanted: dict[str, tuple[str, str]] = {}
    for grant in group_grants():
        if grant.group in groups and (grant.slug not in wanted or _rank(grant.role) > _rank(wanted[grant.slug][0])):
            wanted[grant.slug] = (grant.role, grant.group)
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=wanted)}
    for slug in set(wanted) - set(tenants):
        log.warning("OIDC_GROUP_ROLES names the workspace %r, which does not exist: its grant is skipped", slug)
    return {tenants[slug]: wanted[slug] for slug in tenants}


def _apply_group_roles(user, granted: dict[Tenant, tuple[str, str]]) -> None:
    for tenant, (role, group) in granted.items():
        current = Membership.objects.with_scopes_disabled().filter(tenant=tenant, user=user).first()
        if current is None or _rank(current.role) < _rank(role):
            services.membership_set(tenant=tenant, user=user, role=role, actor=Actor.system(f"sso group {group}"))


@transaction.atomic
def sign_in(identity: Identity):
    """The account for this verified person, made or joined as the rules above say; all or nothing.
    Returns (user, created)."""
    email = identity.email
    try:
        invitations.clean_email(email)
    except ValidationError:
        # Matching is by email (and usernames that are emails): "alice" must not find the account alice.
        raise Refused("bad_email", f"The identity provider's email {email!r} is not an email address.") from None
    accounts = invitations.accounts_for_email(email)
    if len(accounts) > 1:
        raise Refused(
            "ambiguous_email",
            f"More than one account here uses {email}, so single sign-on cannot tell which is yours. "
            "Ask an admin to give each account its own email.",
            claims=identity.claims,
        )
    created = False
    granted = _group_roles(identity.claims)
    if accounts:
        user = accounts[0]
        if not user.is_active:
            raise Refused("inactive", f"The account for {email} is deactivated.", claims=identity.claims)
    elif granted or invitations.pending_invitation_tenants(email) or _domain_allowed(email):
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
    _apply_group_roles(user, granted)
    actor = Actor(user=user)
    audit_person(
        user=user,
        action="accounts.sso.signed_in",
        actor=actor,
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
        for tenant in workspaces_of(invitations.accounts_for_email(email)) + invitations.pending_invitation_tenants(
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
