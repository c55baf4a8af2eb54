"""Which agents a policy applies to: {"agents": [...]}, exact names or shell-style patterns.

An empty list means every agent. Pure Python, like the engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.patterns import name_matches
from core.text import text_problem

from .categories.base import RuleValidationError
from .engine import PolicySpec

MAX_AGENTS = 100
MAX_AGENT_NAME_LENGTH = 200
_AGENT_MESSAGE = f"Must be a non-empty string of at most {MAX_AGENT_NAME_LENGTH} characters."


def clean_scope(raw: Any) -> dict:
    """Validate a submitted scope; returns {"agents": [...]} with duplicates dropped."""
    if raw is None:
        return {"agents": []}
    if not isinstance(raw, dict):
        raise RuleValidationError({"scope": ['Must be an object like {"agents": [...]}.']})
    unknown = [str(key) for key in raw if key != "agents"]
    if unknown:
        raise RuleValidationError({"scope": [f"Unknown key: {key}." for key in unknown]})
    agents = raw.get("agents", [])
    if not isinstance(agents, list):
        raise RuleValidationError({"scope.agents": ["Must be a list of agent names."]})
    if len(agents) > MAX_AGENTS:
        raise RuleValidationError({"scope.agents": [f"Must list at most {MAX_AGENTS} agent names."]})
    problems = []
    for index, agent in enumerate(agents):
        problem = _agent_problem(agent)
        if problem:
            problems.append(f"Item {index + 1}: {problem}")
    if problems:
        raise RuleValidationError({"scope.agents": problems})
    return {"agents": list(dict.fromkeys(agents))}


def _agent_problem(agent: Any) -> str | None:
    if type(agent) is not str or not agent.strip() or len(agent) > MAX_AGENT_NAME_LENGTH:
        return _AGENT_MESSAGE
    return text_problem(agent)


def scope_matches(agents: tuple[str, ...], agent_name: str) -> bool:
    """An empty scope covers every agent; otherwise core.patterns decides (exact names or patterns)."""
    return not agents or name_matches(agents, agent_name)


def applicable_policies(policies: Iterable[PolicySpec], agent_name: str) -> list[PolicySpec]:
    """The policies whose scope covers ``agent_name``, in the order given."""
    return [p for p in policies if not p.agents or scope_matches(p.agents, agent_name)]
