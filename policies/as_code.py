"""Policies as code (docs/policies-as-code.md): a directory of policy files against the tenant's policies.

A file is a policy body as the API takes it (``policies.api.PolicyIn``, the same serializer, then the
same service checks as a save), matched to a policy by name. ``plan_changes`` says what applying the
files would do, field by field, and writes nothing; ``policies_apply`` does it in one transaction,
each change a new version with its audit entry, or nothing at all.
"""

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from rest_framework import exceptions

from core.api.contract import validated
from core.errors import Conflict, InvalidInput
from tenants.audit import Actor
from tenants.models import Tenant

from . import services
from .api import PolicyIn
from .categories import UnknownCategory, get_category
from .models import Mode, Policy

# A file's fields, in the order a pulled file lists them.
FILE_FIELDS = ("name", "description", "category", "mode", "enabled", "scope", "rules")
# What a file leaves out, as a PUT does: back to the default.
FILE_DEFAULTS = {"description": "", "rules": {}, "scope": {}, "enabled": True, "mode": Mode.ENFORCE}
# Beyond any real tenant's policy count; keeps one request's validation bounded.
MAX_POLICY_FILES = 1000
SOURCE = "apply"
PLAN_ACTIONS = ("create", "update", "delete", "unchanged")


@dataclass(frozen=True)
class Desired:
    """One validated file: its position in the request and the policy as the services clean it."""

    index: int
    name: str
    data: dict


@dataclass
class Change:
    action: str  # create, update, delete, unchanged
    name: str
    index: int | None  # the file's position; None for a policy no file names (a delete)
    policy: Policy | None
    data: dict | None
    diff: list = field(default_factory=list)
    impact: dict | None = None  # what it would have decided on recent runs (governance/policy_plan.py)

    @property
    def current_version(self) -> int | None:
        return self.policy.version if self.policy is not None else None


class PlanOutdated(Conflict):
    """Apply found a policy at another version than the plan was made against."""

    def __init__(self, moved: list[dict]):
        names = ", ".join(f"“{m['name']}”" for m in moved)
        super().__init__(f"Changed since the plan: {names}. Nothing was applied; run plan again.")
        self.moved = moved


def _flatten(detail: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested error body as (dotted field, message) pairs: ``rules.min_grounding_score``."""
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            out += _flatten(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(detail, list) and detail and all(isinstance(d, str) for d in detail):
        return [(prefix or "non_field_errors", str(d)) for d in detail]
    if isinstance(detail, list):
        out = []
        for i, value in enumerate(detail):
            out += _flatten(value, f"{prefix}.{i}" if prefix else str(i))
        return out
    return [(prefix or "non_field_errors", str(detail))]


def _problem(index: int, name: Any, field_name: str, message: str) -> dict:
    return {"index": index, "name": name if isinstance(name, str) else None, "field": field_name, "message": message}


def desired_policies(*, tenant: Tenant, items: Any) -> list[Desired]:
    """Validate every file; raises InvalidInput ``{"policies": [{index, name, field, message}, ...]}``
    listing every problem of every file, so the client can name each file and field at once."""
    if not isinstance(items, list):
        raise InvalidInput({"policies": ["Must be a list of policies."]})
    if len(items) > MAX_POLICY_FILES:
        raise InvalidInput({"policies": [f"At most {MAX_POLICY_FILES} policies."]})
    current = {p.name: p.pk for p in Policy.objects.filter(tenant=tenant).only("id", "name")}
    problems: list[dict] = []
    desired: list[Desired] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        try:
            data = validated(PolicyIn, item)
        except exceptions.ValidationError as exc:
            problems += [_problem(index, name, f, m) for f, m in _flatten(exc.detail)]
            continue
        data = {**FILE_DEFAULTS, **{k: v for k, v in data.items() if v is not None}}
        try:
            cleaned = services.policy_validate(tenant=tenant, exclude_pk=current.get(data["name"].strip()), **data)
        except InvalidInput as exc:
            problems += [_problem(index, name, f, m) for f, m in _flatten(exc.errors)]
            continue
        if cleaned["name"] in seen:
            first = seen[cleaned["name"]]
            message = f"Another policy of this request (number {first + 1}) has this name."
            problems.append({**_problem(index, name, "name", message), "duplicate_of": first})
            continue
        seen[cleaned["name"]] = index
        desired.append(Desired(index, cleaned["name"], cleaned))
    if problems:
        raise InvalidInput({"policies": problems})
    return desired


def _effective(category_name: str | None, rules: dict) -> dict:
    try:
        return get_category(category_name).effective_rules(rules) if category_name else dict(rules)
    except UnknownCategory:
        return dict(rules)


def _rule_names(*category_names: str | None) -> list[str]:
    names: list[str] = []
    for name in category_names:
        try:
            names += [spec.name for spec in get_category(name).rules if spec.name not in names]
        except UnknownCategory:
            continue
    return names


def field_diff(current: dict | None, wanted: dict) -> list[dict]:
    """What differs between a policy as stored and as a file wants it, field by field and rule by
    rule, in file order. Rules are compared as stored (a rule set to its default is not the same
    as a rule left out: a later change of the default reaches only the second), and shown with their
    effective values; ``before_default`` / ``after_default`` mark a side where the rule is not set."""
    current = current or {}
    rows = []
    for key in ("name", "description", "category", "mode", "enabled"):
        before, after = current.get(key), wanted.get(key)
        if before != after and not (key == "description" and not before and not after):
            rows.append({"field": key, "before": before, "after": after})
    before_agents = (current.get("scope") or {}).get("agents") or [] if current else None
    after_agents = (wanted.get("scope") or {}).get("agents") or []
    if before_agents != after_agents and not (before_agents is None and not after_agents):
        rows.append({"field": "scope.agents", "before": before_agents, "after": after_agents})
    before_rules, after_rules = current.get("rules") or {}, wanted.get("rules") or {}
    before_effective = _effective(current.get("category"), before_rules) if current else {}
    after_effective = _effective(wanted.get("category"), after_rules)
    names = _rule_names(wanted.get("category"), current.get("category"))
    names += [k for k in (*before_rules, *after_rules) if k not in names]
    for name in names:
        in_before, in_after = name in before_rules, name in after_rules
        if in_before == in_after and before_rules.get(name) == after_rules.get(name):
            if not (current and current.get("category") != wanted.get("category")):
                continue
            if before_effective.get(name) == after_effective.get(name):
                continue
        if not current and not in_after:
            continue  # a new policy: list what it sets, not every default
        row: dict = {"field": f"rules.{name}", "before": before_effective.get(name) if current else None}
        row["after"] = after_effective.get(name)
        if current and not in_before:
            row["before_default"] = True
        if not in_after:
            row["after_default"] = True
        rows.append(row)
    return rows


def _stored(policy: Policy) -> dict:
    return {key: getattr(policy, key) for key in FILE_FIELDS}


def plan_changes(*, tenant: Tenant, desired: list[Desired], prune: bool, policies=None) -> list[Change]:
    """Each file's change against the tenant's policies (``policies``: those already read), then,
    with ``prune``, a delete for every policy no file names. Writes nothing."""
    by_name = {p.name: p for p in (policies if policies is not None else Policy.objects.filter(tenant=tenant))}
    changes = []
    for wanted in desired:
        policy = by_name.get(wanted.name)
        if policy is None:
            changes.append(
                Change("create", wanted.name, wanted.index, None, wanted.data, field_diff(None, wanted.data))
            )
            continue
        stored = _stored(policy)
        same = all(stored[key] == wanted.data[key] for key in FILE_FIELDS)
        diff = [] if same else field_diff(stored, wanted.data)
        changes.append(Change("unchanged" if same else "update", wanted.name, wanted.index, policy, wanted.data, diff))
    if prune:
        named = {wanted.name for wanted in desired}
        for name in sorted(set(by_name) - named, key=str.lower):
            changes.append(Change("delete", name, None, by_name[name], None, []))
    return changes


def expected_versions_problems(expected: Any) -> dict:
    if expected is None:
        return {}
    if not isinstance(expected, dict):
        return {"expected_versions": ['Must be an object {"policy name": version or null}.']}
    bad = [
        str(name)
        for name, version in expected.items()
        if not (version is None or (type(version) is int and 1 <= version <= 2**31 - 1))
    ]
    if bad:
        return {"expected_versions": {name: ["Must be a version number, or null for no such policy."] for name in bad}}
    return {}


def _outdated(by_name: dict[str, Policy], expected: dict) -> list[dict]:
    moved = []
    for name, version in expected.items():
        policy = by_name.get(name)
        current = policy.version if policy is not None else None
        if current != version:
            moved.append({"name": name, "expected_version": version, "current_version": current})
    return moved


def policies_apply(
    *, tenant: Tenant, actor: Actor, desired: list[Desired], prune: bool, expected_versions: dict | None
) -> list[Change]:
    """Apply the files: all or nothing. The tenant's policies are locked first (in id order, as every
    writer that locks several does), so the versions checked against ``expected_versions`` are the
    ones changed; a policy at another version raises PlanOutdated (a 409) and nothing is written.
    Policies applied (and unchanged ones not yet so) become managed by code."""
    try:
        with transaction.atomic():
            locked = list(Policy.objects.select_for_update().filter(tenant=tenant).order_by("id"))
            by_name = {p.name: p for p in locked}
            moved = _outdated(by_name, expected_versions or {})
            if moved:
                raise PlanOutdated(moved)
            changes = plan_changes(tenant=tenant, desired=desired, prune=prune, policies=locked)
            for change in changes:
                _apply_one(tenant=tenant, actor=actor, change=change)
    except IntegrityError:
        # A policy of the same name was created by someone else between our lock and our insert.
        raise Conflict("The tenant's policies changed while applying. Nothing was applied; run plan again.") from None
    return changes


def _apply_one(*, tenant: Tenant, actor: Actor, change: Change) -> None:
    if change.action == "create":
        change.policy = services.policy_create(
            tenant=tenant, actor=actor, managed_by_code=True, source=SOURCE, **(change.data or {})
        )
    elif change.action == "delete" and change.policy is not None:
        services.policy_delete(policy=change.policy, actor=actor, source=SOURCE)
    elif change.policy is not None and (change.action == "update" or not change.policy.managed_by_code):
        change.policy = services.policy_update(
            policy=change.policy, actor=actor, managed_by_code=True, source=SOURCE, **(change.data or {})
        )
