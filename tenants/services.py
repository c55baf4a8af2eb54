"""Writes for tenants, members, API keys and secrets. Each call audits in its own transaction."""

import re
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from core import outbound
from core.text import text_problem
from core.vocabulary import MODEL_PREFIXES
from tenants.audit import Actor, audit_record

from . import crypto
from .models import (
    GRANTABLE_SCOPES,
    ApiKey,
    KeyScope,
    Membership,
    Role,
    Tenant,
    TenantSecret,
    hash_api_key,
)

# fullmatch, not match with "$": "$" also matches before a final newline, so "OPENAI_BASE_URL\n" passed and
# was saved without the outbound check (it does not end with "_BASE_URL").
SECRET_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
MAX_SECRET_BYTES = 8192


@transaction.atomic
def tenant_create(*, slug: str, name: str = "", actor: Actor) -> Tenant:
    tenant = Tenant(slug=slug, name=name or slug)
    tenant.full_clean()
    tenant.save()
    audit_record(
        tenant=tenant,
        action="tenants.tenant.created",
        actor=actor,
        obj=tenant,
        after={"slug": tenant.slug, "name": tenant.name},
    )
    return tenant


@transaction.atomic
def tenant_set_score_audit_rate(*, tenant: Tenant, rate: float, actor: Actor) -> Tenant:
    before = tenant.score_audit_rate
    tenant.score_audit_rate = rate
    tenant.full_clean(validate_unique=False)
    tenant.save(update_fields=["score_audit_rate"])
    audit_record(
        tenant=tenant,
        action="tenants.tenant.score_audit_rate_changed",
        actor=actor,
        obj=tenant,
        before={"score_audit_rate": before},
        after={"score_audit_rate": rate},
    )
    return tenant


SCORE_AUDITORS = ("local", "llm")


@transaction.atomic
def tenant_set_score_auditor(*, tenant: Tenant, auditor: str, model: str, actor: Actor) -> Tenant:
    """Who measures the sampled reports (docs/score-audit.md): the local verifier, or the tenant's LLM
    judge with ``model`` (its provider's key from the tenant's secrets)."""
    if auditor not in SCORE_AUDITORS:
        raise ValidationError({"score_audit_auditor": 'Must be "local" or "llm".'})
    model = (model or "").strip()
    if not any(model.startswith(p) and len(model) > len(p) for p in MODEL_PREFIXES) or len(model) > 200:
        raise ValidationError({"score_audit_model": f"Must be a model name starting with {', '.join(MODEL_PREFIXES)}."})
    before = {"score_audit_auditor": tenant.score_audit_auditor, "score_audit_model": tenant.score_audit_model}
    tenant.score_audit_auditor, tenant.score_audit_model = auditor, model
    tenant.full_clean(validate_unique=False)
    tenant.save(update_fields=["score_audit_auditor", "score_audit_model"])
    audit_record(
        tenant=tenant,
        action="tenants.tenant.score_audit_auditor_changed",
        actor=actor,
        obj=tenant,
        before=before,
        after={"score_audit_auditor": auditor, "score_audit_model": model},
    )
    return tenant


@transaction.atomic
def tenant_set_retention(
    *, tenant: Tenant, retention_days: int | None, audit_retention_days: int | None, actor: Actor
) -> Tenant:
    """How long run data and the audit log are kept (None: forever). The next retention pass
    (governance/retention.py) applies it; nothing is removed here."""
    before = {"retention_days": tenant.retention_days, "audit_retention_days": tenant.audit_retention_days}
    tenant.retention_days = retention_days
    tenant.audit_retention_days = audit_retention_days
    tenant.full_clean(validate_unique=False)
    tenant.save(update_fields=["retention_days", "audit_retention_days"])
    audit_record(
        tenant=tenant,
        action="tenants.tenant.retention_changed",
        actor=actor,
        obj=tenant,
        before=before,
        after={"retention_days": retention_days, "audit_retention_days": audit_retention_days},
    )
    return tenant


def workspace_create(*, name: str, slug: str, user, actor: Actor) -> Tenant:
    """A new tenant with ``user`` as its first admin: how a fresh server's first person gets started.

    The slug is the workspace's identity; a name already taken is refused too, since the tenant
    switcher shows names only.
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "This field is required."})
    taken = ValidationError({"slug": "A workspace with this slug already exists."})
    if Tenant.objects.filter(name__iexact=name).exists():
        raise ValidationError({"name": "A workspace with this name already exists."})
    if Tenant.objects.filter(slug=slug).exists():
        raise taken
    try:
        with transaction.atomic():
            tenant = tenant_create(slug=slug, name=name, actor=actor)
            membership_set(tenant=tenant, user=user, role=Role.ADMIN, actor=actor)
    except IntegrityError:  # the same slug, created by someone else since the check above
        raise taken from None
    return tenant


ROLE_CHOICE_ERROR = f"Choose one of: {', '.join(Role.values)}."


def validate_role(role) -> None:
    if role not in Role.values:
        raise ValidationError({"role": ROLE_CHOICE_ERROR})


def _admin_count(tenant: Tenant) -> int:
    return Membership.objects.with_scopes_disabled().filter(tenant=tenant, role=Role.ADMIN).count()


@transaction.atomic
def membership_set(*, tenant: Tenant, user, role: str, actor: Actor) -> Membership:
    validate_role(role)
    existing = Membership.objects.with_scopes_disabled().select_for_update().filter(tenant=tenant, user=user).first()
    before = {"user": user.get_username(), "role": existing.role} if existing else None
    if existing and existing.role == Role.ADMIN and role != Role.ADMIN and _admin_count(tenant) <= 1:
        raise ValidationError({"role": "A tenant must keep at least one admin."})
    if existing:
        existing.role = role
        existing.save(update_fields=["role"])
        membership, action = existing, "tenants.membership.updated"
    else:
        membership = Membership.objects.create(tenant=tenant, user=user, role=role)
        action = "tenants.membership.created"
    audit_record(
        tenant=tenant,
        action=action,
        actor=actor,
        object_type="tenants.membership",
        object_id=membership.pk,
        before=before,
        after={"user": user.get_username(), "role": role},
    )
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor: Actor) -> None:
    tenant = membership.tenant
    if membership.role == Role.ADMIN and _admin_count(tenant) <= 1:
        raise ValidationError({"role": "A tenant must keep at least one admin."})
    before = {"user": membership.user.get_username(), "role": membership.role}
    pk = membership.pk
    membership.delete()
    audit_record(
        tenant=tenant,
        action="tenants.membership.deleted",
        actor=actor,
        object_type="tenants.membership",
        object_id=pk,
        before=before,
    )


def user_create_admin(*, tenant: Tenant, email: str, password: str, actor: Actor):
    """Create (or reuse) a user by email and make them an admin of the tenant."""
    User = get_user_model()
    user = User.objects.filter(username=email).first()
    if user is None:
        user = User.objects.create_user(username=email, email=email, password=password)
    membership_set(tenant=tenant, user=user, role=Role.ADMIN, actor=actor)
    return user


MAX_KEY_AGENTS = 100
MAX_KEY_AGENT_LENGTH = 200
MAX_KEY_EXPIRY_DAYS = 3650


def _clean_key_agents(agents, scope: str) -> list[str]:
    agents = list(agents or [])
    if agents and scope != KeyScope.AGENT:
        raise ValidationError({"agents": "Only agent keys are pinned to agent names."})
    if len(agents) > MAX_KEY_AGENTS:
        raise ValidationError({"agents": f"At most {MAX_KEY_AGENTS} agent names or patterns."})
    cleaned = []
    for agent in agents:
        if not isinstance(agent, str) or not agent.strip() or len(agent) > MAX_KEY_AGENT_LENGTH or "\x00" in agent:
            raise ValidationError(
                {
                    "agents": f"Each agent name or pattern is a non-empty string of at most "
                    f"{MAX_KEY_AGENT_LENGTH} characters."
                }
            )
        cleaned.append(agent.strip())
    return list(dict.fromkeys(cleaned))


def _expiry(expires_in_days):
    if expires_in_days is None:
        return None
    if (
        isinstance(expires_in_days, bool)
        or not isinstance(expires_in_days, int)
        or not 1 <= expires_in_days <= MAX_KEY_EXPIRY_DAYS
    ):
        raise ValidationError({"expires_in_days": f"A whole number of days from 1 to {MAX_KEY_EXPIRY_DAYS}."})
    return timezone.now() + timedelta(days=expires_in_days)


@transaction.atomic
def api_key_create(
    *,
    tenant: Tenant,
    name: str,
    actor: Actor,
    scope: str = KeyScope.AGENT,
    agents=(),
    expires_in_days: int | None = None,
) -> tuple[ApiKey, str]:
    """Returns the key row and the raw key. The raw key is never stored and cannot be shown again.

    New keys get the least privilege by default (``agent``); ``legacy`` is never granted, it only
    marks keys made before scopes existed.
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "This field is required."})
    if len(name) > 100:
        raise ValidationError({"name": "At most 100 characters."})
    if scope not in GRANTABLE_SCOPES:
        raise ValidationError({"scope": f"Must be one of: {', '.join(GRANTABLE_SCOPES)}."})
    agents = _clean_key_agents(agents, scope)
    expires_at = _expiry(expires_in_days)
    raw = ApiKey.generate()
    key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        prefix=raw[:10],
        key_hash=hash_api_key(raw),
        created_by=actor.user,
        scope=scope,
        agents=agents,
        expires_at=expires_at,
    )
    audit_record(
        tenant=tenant,
        action="tenants.api_key.created",
        actor=actor,
        obj=key,
        after={
            "name": key.name,
            "prefix": key.prefix,
            "scope": key.scope,
            "agents": key.agents,
            "expires_at": expires_at.isoformat() if expires_at else None,
        },
    )
    return key, raw


@transaction.atomic
def api_key_revoke(*, key: ApiKey, actor: Actor) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_record(
            tenant=key.tenant,
            action="tenants.api_key.revoked",
            actor=actor,
            obj=key,
            before={"name": key.name, "prefix": key.prefix, "revoked": False},
            after={"name": key.name, "prefix": key.prefix, "revoked": True},
        )
    return key


def is_secret_name(name) -> bool:
    return isinstance(name, str) and SECRET_NAME_RE.fullmatch(name) is not None


def validate_secret_name(name: str) -> None:
    if not is_secret_name(name):
        raise ValidationError(
            {
                "name": "Use an environment-variable style name: A-Z, 0-9 and _, "
                "starting with a letter, at most 64 characters."
            }
        )


@transaction.atomic
def secret_set(*, tenant: Tenant, name: str, value: str, actor: Actor) -> TenantSecret:
    validate_secret_name(name)
    if not isinstance(value, str) or value == "":
        raise ValidationError({"value": "Must be a non-empty string."})
    if len(value.encode()) > MAX_SECRET_BYTES:
        raise ValidationError({"value": f"At most {MAX_SECRET_BYTES} bytes."})
    if text_problem(value):
        raise ValidationError({"value": text_problem(value)})
    if name.endswith("_BASE_URL"):
        # A URL the server will call with the tenant's provider key: never one of our own network.
        try:
            outbound.check_url(value.strip())
        except outbound.OutboundRefused as exc:
            raise ValidationError({"value": f"{name}: {exc}"}) from None
    now = timezone.now()
    secret = TenantSecret.objects.with_scopes_disabled().select_for_update().filter(tenant=tenant, name=name).first()
    existed = secret is not None
    if secret is None:
        secret = TenantSecret(tenant=tenant, name=name, created_at=now)
    secret.ciphertext = crypto.encrypt(value)
    secret.hint = crypto.mask(value)
    secret.updated_at = now
    secret.save()
    audit_record(
        tenant=tenant,
        action="tenants.secret.updated" if existed else "tenants.secret.created",
        actor=actor,
        object_type="tenants.tenantsecret",
        object_id=secret.pk,
        before={"name": name, "value": "set"} if existed else None,
        after={"name": name, "value": "set", "hint": secret.hint},
    )
    return secret


@transaction.atomic
def secret_delete(*, secret: TenantSecret, actor: Actor) -> None:
    tenant, name, pk = secret.tenant, secret.name, secret.pk
    secret.delete()
    audit_record(
        tenant=tenant,
        action="tenants.secret.deleted",
        actor=actor,
        object_type="tenants.tenantsecret",
        object_id=pk,
        before={"name": name, "value": "set"},
    )


def secret_value(*, tenant: Tenant, name: str) -> str | None:
    """The plaintext of a tenant secret, or None. For server-side provider calls only."""
    secret = TenantSecret.objects.with_scopes_disabled().filter(tenant=tenant, name=name).first()
    if secret is None:
        return None
    try:
        return secret.reveal()
    except crypto.SecretUnreadable:
        return None
