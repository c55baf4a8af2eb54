"""The plan of a directory of policy files (docs/policies-as-code.md): what would change, field by
field (policies.as_code), and what those changes would have decided on the tenant's recent runs.

The impact is the replay's (governance/replay.py reads the stored runs, policies/replay.py's
``PlanReplayer`` re-decides them with the same engine), for each change alone and for all of them
together, in one pass over the stored runs. Its cost is bounded: at most POLICY_PLAN_MAX_DAYS days,
and of those only the most recent runs holding POLICY_PLAN_MAX_REPORTS reports (the answer says
when it sampled so).
"""

import time
from dataclasses import asdict
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Sum, Window
from django.utils import timezone

from core.errors import InvalidInput
from policies.as_code import Change, desired_policies, plan_changes
from policies.categories import get_category
from policies.engine import PolicySpec
from policies.replay import PlanReplayer, enforced_only
from policies.selectors import policy_specs_for
from tenants.models import Tenant

from .models import Run
from .replay import run_rows

DEFAULT_DAYS = 7
PLAN_KEYS = {"policies", "prune", "replay_days"}
# A new policy has no id yet: it decides after every existing one (policy order is by id).
NEW_POLICY_ID = 2**62


def max_days() -> int:
    return int(settings.POLICY_PLAN_MAX_DAYS)


def max_reports() -> int:
    return int(settings.POLICY_PLAN_MAX_REPORTS)


def envelope_problems(data, keys: set[str]) -> dict:
    """The request's own fields (not the policies'): unknown keys, prune, replay_days."""
    if not isinstance(data, dict):
        raise InvalidInput({"non_field_errors": ["Expected a JSON object."]})
    errors: dict = {key: ["Unknown field."] for key in data if key not in keys}
    if "policies" not in data:
        errors["policies"] = ["This field is required."]
    if "prune" in data and type(data["prune"]) is not bool:
        errors["prune"] = ["Must be true or false."]
    if "replay_days" in keys and "replay_days" in data:
        days = data["replay_days"]
        if type(days) is not int or not 0 <= days <= max_days():
            errors["replay_days"] = [f"Must be a whole number between 0 and {max_days()}."]
    return errors


def _candidate(change: Change) -> PolicySpec | None:
    """The policy as the change leaves it, as the engine would decide with it; None if it would not
    decide (deleted, disabled, or in shadow mode)."""
    data = change.data
    if data is None or not data["enabled"] or data["mode"] != "enforce":
        return None
    return PolicySpec(
        id=change.policy.pk if change.policy is not None else NEW_POLICY_ID + (change.index or 0),
        name=data["name"],
        category=data["category"],
        version=(change.current_version or 0) + 1,
        rules=get_category(data["category"]).effective_rules(data["rules"]),
        agents=tuple(data["scope"]["agents"]),
    )


def _with_changes(before: tuple[PolicySpec, ...], changes: list[Change]) -> tuple[PolicySpec, ...]:
    """The enforced policies once ``changes`` are made, in policy order. Unchanged policies are the
    same objects as in ``before`` (the replayer shares their evaluations)."""
    touched = {change.policy.pk for change in changes if change.policy is not None}
    specs = [spec for spec in before if spec.id not in touched]
    specs += [spec for spec in map(_candidate, changes) if spec is not None]
    return tuple(sorted(specs, key=lambda spec: spec.id))


def _window(tenant: Tenant, days: int) -> dict:
    """since/until of the replay, moved forward to the most recent runs holding at most
    max_reports() reports when the whole window holds more."""
    until = timezone.now()
    since = until - timedelta(days=days)
    runs = Run.objects.filter(tenant=tenant, started_at__gte=since, started_at__lt=until)
    total = runs.aggregate(total=Sum("report_count"))["total"] or 0
    sampled = total > max_reports()
    if sampled:
        running = Window(Sum("report_count"), order_by=[F("started_at").desc(), F("id").desc()])
        cutoff = (
            runs.annotate(running=running)
            .filter(running__gte=max_reports())
            .order_by("running")
            .values_list("started_at", flat=True)
            .first()
        )
        since = cutoff or since
    return {"since": since, "until": until, "sampled": sampled, "reports_in_window": total}


def plan_impact(*, tenant: Tenant, changes: list[Change], days: int) -> tuple[dict | None, dict]:
    """(the impact of all changes together, the replay's figures); sets each change's ``impact``."""
    started = time.perf_counter()
    moving = [change for change in changes if change.action in ("create", "update", "delete")]
    window = _window(tenant, days)
    before = enforced_only(policy_specs_for(tenant))
    sets = [_with_changes(before, [change]) for change in moving]
    if len(moving) > 1:
        sets.append(_with_changes(before, moving))
    replayer = PlanReplayer(before, sets)
    candidates = [spec for spec in map(_candidate, moving) if spec is not None]
    plan = {
        "since": window["since"].isoformat(),
        "until": window["until"].isoformat(),
        "agents": [],
        "before": [asdict(spec) for spec in before],
        "after": [asdict(spec) for spec in candidates],
    }
    if moving:
        for row in run_rows(tenant.pk, plan):
            replayer.run(row)
    impacts = [impact.to_dict() for impact in replayer.impacts]
    for change, impact in zip(moving, impacts, strict=False):
        change.impact = impact
    together = impacts[-1] if moving else None
    figures = {
        "days": days,
        "since": plan["since"],
        "until": plan["until"],
        "sampled": window["sampled"],
        "max_reports": max_reports(),
        "reports_in_window": window["reports_in_window"],
        "runs": replayer.runs,
        "reports": replayer.reports,
        "decisions": replayer.decisions,
        "judges_reused": replayer.judges_reused,
        "judges_missing": replayer.judges_missing,
        "elapsed_ms": int((time.perf_counter() - started) * 1000),
    }
    return together, figures


def policy_row(change: Change) -> dict:
    policy = change.policy
    return {
        "name": change.name,
        "index": change.index,
        "action": change.action,
        "id": policy.pk if policy is not None else None,
        "current_version": change.current_version,
        "managed_by_code": policy.managed_by_code if policy is not None else False,
        "diff": change.diff,
        "impact": change.impact,
    }


def counts(changes: list[Change]) -> dict:
    out = dict.fromkeys(("create", "update", "delete", "unchanged"), 0)
    for change in changes:
        out[change.action] += 1
    return out


def expected_versions(changes: list[Change]) -> dict:
    """What apply should find: each named policy's current version (null: none of that name)."""
    return {change.name: change.current_version for change in changes}


def policies_plan(*, tenant: Tenant, data) -> dict:
    """The plan's answer; changes nothing. 400s name the field (and for a file, its index and name)."""
    errors = envelope_problems(data, PLAN_KEYS)
    if errors:
        raise InvalidInput(errors)
    desired = desired_policies(tenant=tenant, items=data["policies"])
    prune = data.get("prune", False)
    days = data.get("replay_days", DEFAULT_DAYS)
    changes = plan_changes(tenant=tenant, desired=desired, prune=prune)
    moving = any(change.action != "unchanged" for change in changes)
    together, figures = plan_impact(tenant=tenant, changes=changes, days=days) if moving and days else (None, None)
    return {
        "changes": counts(changes),
        "changed": moving,
        "prune": prune,
        "policies": [policy_row(change) for change in changes],
        "impact": together,
        "replay": figures,
        "expected_versions": expected_versions(changes),
    }
