"""What changed between two versions of a policy, for the history page."""

from dataclasses import dataclass
from typing import Any

from policies.categories import UnknownCategory, get_category

from .forms import format_value


@dataclass(frozen=True)
class Change:
    field: str
    label: str
    old: str
    new: str


def _flatten(snapshot: dict | None) -> dict[str, tuple[str, Any]]:
    """A snapshot as {key: (label, value)}, rules with their defaults filled in.

    Effective rules, not stored ones: what matters to a reader is how the policy behaves, so
    leaving a rule at its default and pinning it to the same value read as no change.
    """
    if not snapshot:
        return {}
    flat: dict[str, tuple[str, Any]] = {
        "name": ("Name", snapshot.get("name")),
        "description": ("Description", snapshot.get("description") or ""),
        "category": ("Category", snapshot.get("category")),
        "enabled": ("Enabled", snapshot.get("enabled")),
        "scope.agents": ("Scope: agents", ", ".join((snapshot.get("scope") or {}).get("agents") or []) or "all agents"),
    }
    rules = snapshot.get("rules") or {}
    try:
        category = get_category(snapshot.get("category"))
    except UnknownCategory:
        for key, value in rules.items():
            flat[f"rules.{key}"] = (key, value)
        return flat
    effective = category.effective_rules(rules)
    for spec in category.rules:
        flat[f"rules.{spec.name}"] = (spec.label, effective[spec.name])
    return flat


def _show(value) -> str:
    if isinstance(value, str) and value and value not in ("all agents",):
        return value
    return format_value(value)


def snapshot_diff(old: dict | None, new: dict | None) -> list[Change]:
    """The keys whose value differs, in form order; old is None for the first version."""
    before, after = _flatten(old), _flatten(new)
    changes = []
    for key in list(after) + [k for k in before if k not in after]:
        old_label, old_value = before.get(key, ("", None))
        label, new_value = after.get(key, (old_label, None))
        if key in before and key in after and old_value == new_value and type(old_value) is type(new_value):
            continue
        if not old and key in after:
            # The first version: list what it was created with, leaving out rules at their default.
            if key.startswith("rules.") and key.removeprefix("rules.") not in ((new or {}).get("rules") or {}):
                continue
            changes.append(Change(key, label, "", _show(new_value)))
            continue
        changes.append(
            Change(key, label, _show(old_value) if key in before else "", _show(new_value) if key in after else "")
        )
    return changes


def versions_with_diffs(versions) -> list[tuple[Any, list[Change]]]:
    """(version, its changes against the one before) for versions given oldest first; newest first out."""
    rows = []
    previous = None
    for version in versions:
        rows.append((version, snapshot_diff(previous, version.snapshot)))
        previous = version.snapshot
    rows.reverse()
    return rows
