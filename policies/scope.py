"""Which agents a policy applies to: {"agents": [...]}, exact names or shell-style patterns.

An empty list means every agent. Pure Python, like the engine.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

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


@lru_cache(maxsize=4096)
def _matcher(agents: tuple[str, ...]):
    """Exact names as a set, and a compiled regex for the ones that are patterns."""
    patterns = [fnmatch.translate(a) for a in agents if any(c in a for c in "*?[")]
    regex = re.compile("|".join(patterns)).match if patterns else None
    return frozenset(agents), regex


def scope_matches(agents: tuple[str, ...], agent_name: str) -> bool:
    if not agents:
        return True
    exact, regex = _matcher(tuple(agents))
    # An entry always matches its own literal name, even one like "agent[1]".
    return agent_name in exact or (regex is not None and regex(agent_name) is not None)


def applicable_policies(policies: Iterable[PolicySpec], agent_name: str) -> list[PolicySpec]:
    """The policies whose scope covers ``agent_name``, in the order given."""
    return [p for p in policies if not p.agents or scope_matches(p.agents, agent_name)]
