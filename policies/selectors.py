"""Reads for policies, including the per-process cache the hot path uses."""

import threading

from tenants.models import Tenant

from .categories.grounding_context import grounding_context
from .engine import PolicySpec
from .models import Policy
from .scope import applicable_policies

_cache: dict[int, tuple[int, tuple[PolicySpec, ...]]] = {}
_lock = threading.Lock()


def policy_specs_for(tenant: Tenant) -> tuple[PolicySpec, ...]:
    """The tenant's enabled policies as engine specs, in policy order (by id).

    Cached per process and keyed by `tenant.policy_generation`, which every policy change bumps in
    its transaction; the tenant row comes with the API key, so a hit costs no query at all.
    """
    hit = _cache.get(tenant.pk)
    if hit is not None and hit[0] == tenant.policy_generation:
        return hit[1]
    specs = tuple(
        PolicySpec(
            id=p.pk,
            name=p.name,
            category=p.category,
            version=p.version,
            rules=p.effective_rules,
            agents=tuple(p.agents),
            mode=p.mode,
        )
        for p in Policy.objects.filter(tenant=tenant, enabled=True).order_by("id")
    )
    with _lock:
        _cache[tenant.pk] = (tenant.policy_generation, specs)
    return specs


def clear_policy_cache() -> None:
    with _lock:
        _cache.clear()


def grounding_context_for(*, tenant: Tenant, agent_name: str) -> dict:
    """The context rules that apply to an agent and the policy they come from (docs/grounding-context.md).

    See ``policies.categories.grounding_context.context_for`` for which policy that is. Costs no
    query when the policy cache is warm.
    """
    return grounding_context(applicable_policies(policy_specs_for(tenant), agent_name))
