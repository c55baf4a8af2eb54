"""What a page needs to show the snippets that connect an agent (config/templates/connect/): the
overview of a tenant with no run yet shows them with a placeholder key, the API keys page with the key
just created. One template holds each snippet, and tests/test_connect_snippets.py runs them as
rendered against a live server.
"""

import json
import shlex

from core.patterns import is_pattern, name_matches
from tenants.models import ApiKey, KeyScope

# Where no key is at hand (the empty overview): visibly not a key, and the SDK says which variable
# it expected if it is pasted as is.
PLACEHOLDER_KEY = "gr_YOUR_KEY"
EXAMPLE_AGENT = "my-agent"


def server_url(request) -> str:
    """This server's root as the browser reached it (behind a proxy: as SECURE_PROXY_SSL_HEADER and
    ALLOWED_HOSTS let Django see it)."""
    return request.build_absolute_uri("/").rstrip("/")


def example_agent(agents) -> str:
    """An agent name the key may act for: the first exact name it is pinned to, else its first pattern
    with the wildcards filled in, else a generic name (an unpinned key acts for any agent)."""
    agents = list(agents or [])
    for name in agents:
        if not is_pattern(name):
            return name
    for pattern in agents:
        candidate = pattern.replace("*", "agent").replace("?", "a")
        if not is_pattern(candidate) and name_matches([pattern], candidate):
            return candidate
    # A pattern always matches itself literally (core/patterns.py), so this name is always allowed.
    return agents[0] if agents else EXAMPLE_AGENT


def connect_context(request, *, key: ApiKey | None = None, raw_key: str | None = None) -> dict:
    agent = example_agent(key.agents if key else ())
    return {
        "server_url": server_url(request),
        "api_key": raw_key or PLACEHOLDER_KEY,
        # Quoted for where each snippet puts it: a JSON string is a Python string literal.
        "agent_py": json.dumps(agent),
        "agent_sh": shlex.quote(agent),
        "scope": key.scope if key else KeyScope.AGENT,
    }
