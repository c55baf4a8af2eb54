"""Agent names matched against a list of exact names or shell-style patterns ("support-*").

Shared by policy scopes (which agents a policy governs) and API keys pinned to agents (which
agents a key may report as), so both read a pattern the same way. Pure Python.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from functools import lru_cache


def is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")


@lru_cache(maxsize=4096)
def _matcher(names: tuple[str, ...]):
    """Exact names as a set, and a compiled regex for the ones that are patterns."""
    patterns = [fnmatch.translate(n) for n in names if is_pattern(n)]
    regex = re.compile("|".join(patterns)).match if patterns else None
    return frozenset(names), regex


def name_matches(names: Iterable[str], name: str) -> bool:
    """True if ``name`` is one of ``names`` or matches one of its patterns. No names: False."""
    names = tuple(names)
    if not names:
        return False
    exact, regex = _matcher(names)
    # An entry always matches its own literal name, even one like "agent[1]".
    return name in exact or (regex is not None and regex(name) is not None)
