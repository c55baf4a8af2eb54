"""Writes for policies: validate, save, snapshot a version, audit, and invalidate the tenant's cache."""

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.errors import InvalidInput
from core.text import text_problem
from tenants.audit import Actor, audit_record
from tenants.models import Tenant

from .categories import CATEGORIES, RuleValidationError, UnknownCategory, get_category
from .models import Mode, Policy, PolicyVersion
from .scope import clean_scope

_UNSET: Any = object()


def _clean(
    *, tenant: Tenant, name, description, category, rules, scope, enabled, mode=Mode.ENFORCE, exclude_pk=None
) -> dict:
    errors: dict = {}
    cleaned: dict = {}
    if mode not in Mode.values or not isinstance(mode, str):
        errors["mode"] = [f"Must be one of: {', '.join(Mode.values)}."]
    else:
        cleaned["mode"] = mode
    if name is not None and not isinstance(name, str):
        errors["name"] = ["Must be a string."]
    elif not name or not name.strip():
        errors["name"] = ["This field is required."]
    elif text_problem(name):
        errors["name"] = [text_problem(name)]
    elif len(name.strip()) > 200:
        errors["name"] = ["At most 200 characters."]
    else:
        cleaned["name"] = name.strip()
        clash = Policy.objects.filter(tenant=tenant, name=cleaned["name"])
        if exclude_pk:
            clash = clash.exclude(pk=exclude_pk)
        if clash.exists():
            errors["name"] = ["A policy with this name already exists."]
    if description is None:
        description = ""
    if not isinstance(description, str) or len(description) > 5000:
        errors["description"] = ["Must be a string of at most 5000 characters."]
    elif text_problem(description):
        errors["description"] = [text_problem(description)]
    else:
        cleaned["description"] = description
    if not isinstance(enabled, bool):
        errors["enabled"] = ["Must be true or false."]
    else:
        cleaned["enabled"] = enabled
    category_obj = None
    if category is None:
        errors["category"] = ["This field is required."]
    elif not isinstance(category, str):
        errors["category"] = [f"Must be one of: {', '.join(sorted(CATEGORIES))}."]
    else:
        try:
            category_obj = get_category(category)
            cleaned["category"] = category
        except UnknownCategory:
            errors["category"] = [f"Unknown category '{category}'. Available: {', '.join(sorted(CATEGORIES))}."]
    if category_obj is not None:
        try:
            cleaned["rules"] = category_obj.clean_rules({} if rules is None else rules)
        except RuleValidationError as exc:
            errors["rules"] = exc.errors
    try:
        cleaned["scope"] = clean_scope(scope)
    except RuleValidationError as exc:
        errors["scope"] = exc.errors.get("scope") or exc.errors
    if errors:
        raise InvalidInput(errors)
    return cleaned


def policy_validate(
    *,
    tenant: Tenant,
    exclude_pk=None,
    name,
    category,
    rules=None,
    scope=None,
    enabled=True,
    description="",
    mode=Mode.ENFORCE,
) -> dict:
    """Validate a policy without saving it (the dashboard's live validation); raises InvalidInput."""
    return _clean(
        tenant=tenant,
        exclude_pk=exclude_pk,
        name=name,
        description=description,
        category=category,
        rules=rules,
        scope=scope,
        enabled=enabled,
        mode=mode,
    )


def _bump_generation(tenant: Tenant) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(policy_generation=F("policy_generation") + 1)


def _snapshot(policy: Policy, change: str, actor: Actor, rolled_back_to: int | None = None) -> None:
    PolicyVersion.objects.create(
        tenant=policy.tenant,
        policy=policy if change != PolicyVersion.Change.DELETED else None,
        policy_ref=policy.pk,
        version=policy.version,
        change=change,
        snapshot=policy.snapshot(),
        actor=actor.user,
        actor_label=actor.label[:200],
        rolled_back_to=rolled_back_to,
    )


@transaction.atomic
def policy_create(
    *,
    tenant: Tenant,
    actor: Actor,
    name,
    category,
    rules=None,
    scope=None,
    enabled=True,
    description="",
    mode=Mode.ENFORCE,
    managed_by_code: bool = False,
    source: str = "",
) -> Policy:
    data = _clean(
        tenant=tenant,
        name=name,
        description=description,
        category=category,
        rules=rules,
        scope=scope,
        enabled=enabled,
        mode=mode,
    )
    now = timezone.now()
    policy = Policy.objects.create(
        tenant=tenant,
        version=1,
        created_at=now,
        updated_at=now,
        created_by=actor.user,
        updated_by=actor.user,
        managed_by_code=managed_by_code,
        **data,
    )
    _snapshot(policy, PolicyVersion.Change.CREATED, actor)
    audit_record(
        tenant=tenant,
        action="policies.policy.created",
        actor=actor,
        obj=policy,
        after=_sourced(policy.snapshot(), source),
    )
    _bump_generation(tenant)
    return policy


@transaction.atomic
def policy_update(
    *,
    policy: Policy,
    actor: Actor,
    name=_UNSET,
    category=_UNSET,
    rules=_UNSET,
    scope=_UNSET,
    enabled=_UNSET,
    description=_UNSET,
    mode=_UNSET,
    managed_by_code=_UNSET,
    source: str = "",
) -> Policy:
    """Partial update: only the arguments given change. A category change resets nothing implicitly:
    the given (or existing) rules must be valid for the new category.

    ``managed_by_code`` is a label, not behaviour: changing it alone makes no version (an apply
    that adopts a policy whose file matches it, docs/policies-as-code.md), only an audit entry.
    ``source`` (such as "apply") is recorded in the audit entry."""
    policy = Policy.objects.select_for_update().get(pk=policy.pk)
    before = policy.snapshot()
    pick = lambda value, current: current if value is _UNSET else value  # noqa: E731
    data = _clean(
        tenant=policy.tenant,
        exclude_pk=policy.pk,
        name=pick(name, policy.name),
        description=pick(description, policy.description),
        category=pick(category, policy.category),
        rules=pick(rules, policy.rules),
        scope=pick(scope, policy.scope),
        enabled=pick(enabled, policy.enabled),
        mode=pick(mode, policy.mode),
    )
    changed = {k for k, v in data.items() if getattr(policy, k) != v}
    adopt = managed_by_code is not _UNSET and managed_by_code != policy.managed_by_code
    if adopt:
        policy.managed_by_code = managed_by_code
    if not changed:
        if adopt:
            policy.save(update_fields=["managed_by_code"])
            audit_record(
                tenant=policy.tenant,
                action="policies.policy.managed_by_code" if managed_by_code else "policies.policy.unmanaged",
                actor=actor,
                obj=policy,
                before={"managed_by_code": not managed_by_code},
                after=_sourced({"managed_by_code": managed_by_code}, source),
            )
        return policy
    for key in changed:
        setattr(policy, key, data[key])
    policy.version += 1
    policy.updated_at = timezone.now()
    policy.updated_by = actor.user
    policy.save()
    if changed == {"enabled"}:
        change = PolicyVersion.Change.ENABLED if policy.enabled else PolicyVersion.Change.DISABLED
    else:
        change = PolicyVersion.Change.UPDATED
    _snapshot(policy, change, actor)
    audit_record(
        tenant=policy.tenant,
        action=f"policies.policy.{change}",
        actor=actor,
        obj=policy,
        before=before,
        after=_sourced(policy.snapshot(), source),
    )
    _bump_generation(policy.tenant)
    return policy


def _sourced(data: dict, source: str) -> dict:
    """An audit entry's after-state, with what made the change when it was not a person's edit."""
    return {**data, "source": source} if source else data


def policy_set_enabled(*, policy: Policy, enabled: bool, actor: Actor) -> Policy:
    return policy_update(policy=policy, actor=actor, enabled=enabled)


@transaction.atomic
def policy_delete(*, policy: Policy, actor: Actor, source: str = "") -> None:
    before = policy.snapshot()
    policy.version += 1
    _snapshot(policy, PolicyVersion.Change.DELETED, actor)
    audit_record(
        tenant=policy.tenant,
        action="policies.policy.deleted",
        actor=actor,
        obj=policy,
        before=before,
        after=_sourced({}, source) or None,
    )
    tenant = policy.tenant
    policy.delete()
    _bump_generation(tenant)


# What a rollback restores: how the policy behaves. Name and description are labels, not
# behaviour, and stay as they are now.
ROLLBACK_FIELDS = ("category", "rules", "scope", "enabled", "mode")


@transaction.atomic
def policy_rollback(*, policy: Policy, version, actor: Actor) -> Policy:
    """A new version whose rules, scope, enabled state (and category and mode, which the rules
    belong to) are those of ``version``. History is never rewritten: the version number goes up."""
    if type(version) is not int or version < 1:
        raise InvalidInput({"version": ["Must be a whole number of at least 1."]})
    policy = Policy.objects.select_for_update().get(pk=policy.pk)
    target = PolicyVersion.objects.filter(tenant=policy.tenant, policy_ref=policy.pk, version=version).first()
    if target is None:
        raise InvalidInput({"version": [f"Policy {policy.pk} has no version {version}."]})
    if version == policy.version:
        raise InvalidInput({"version": [f"Version {version} is the current version."]})
    old = target.snapshot
    before = policy.snapshot()
    # Validated again: the category's schema may have changed since that version was saved.
    data = _clean(
        tenant=policy.tenant,
        exclude_pk=policy.pk,
        name=policy.name,
        description=policy.description,
        category=old.get("category", policy.category),
        rules=old.get("rules") or {},
        scope=old.get("scope") or {},
        enabled=old.get("enabled", True),
        mode=old.get("mode", Mode.ENFORCE),
    )
    for key in ROLLBACK_FIELDS:
        setattr(policy, key, data[key])
    policy.version += 1
    policy.updated_at = timezone.now()
    policy.updated_by = actor.user
    policy.save()
    _snapshot(policy, PolicyVersion.Change.ROLLED_BACK, actor, rolled_back_to=version)
    audit_record(
        tenant=policy.tenant,
        action="policies.policy.rolled_back",
        actor=actor,
        obj=policy,
        before=before,
        after={**policy.snapshot(), "rolled_back_to": version},
    )
    _bump_generation(policy.tenant)
    return policy
