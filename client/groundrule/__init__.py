"""Groundrule SDK: report an agent's grounding to a Groundrule server and obey its decisions.

import groundrule

client = groundrule.Client()  # GROUNDRULE_URL, GROUNDRULE_API_KEY
with client.run(agent_name="research-agent") as run:
    run.record_grounding(grounding_scores=[0.9], citations=["Source A"], unsupported_claims=[])
    run.set_result({"answer": "..."})
"""

from ._async import AsyncClient, AsyncRun
from ._sync import Client, Run
from ._version import __version__
from .context import TRUNCATION_MARKER, GroundingDecision, decide_grounding
from .decision import FAIL_OPEN_REASON, Decision, Evaluation
from .errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    GroundruleAPIError,
    GroundruleError,
    GroundruleUnavailable,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PolicyViolationError,
    RateLimitError,
)

__all__ = [
    "AsyncClient",
    "AsyncRun",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConfigurationError",
    "ConflictError",
    "Decision",
    "Evaluation",
    "FAIL_OPEN_REASON",
    "GroundingDecision",
    "GroundruleAPIError",
    "GroundruleError",
    "GroundruleUnavailable",
    "NotFoundError",
    "PermissionDeniedError",
    "PayloadTooLargeError",
    "PolicyViolationError",
    "RateLimitError",
    "Run",
    "TRUNCATION_MARKER",
    "__version__",
    "decide_grounding",
]
