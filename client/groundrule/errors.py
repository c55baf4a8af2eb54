"""What the SDK raises.

`PolicyViolationError` is a governance outcome (a policy blocked the run); the others derive from
`GroundruleError` and are about talking to the server. They are kept apart so that
`except GroundruleError` never swallows a block by accident.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .decision import Decision


class PolicyViolationError(Exception):
    """A policy blocked the run. `str(error)` is the decision's reason."""

    def __init__(self, decision: Decision, run_id: int | None = None) -> None:
        super().__init__(decision.reason)
        self.decision = decision
        self.run_id = run_id

    @property
    def reason(self) -> str:
        return self.decision.reason

    @property
    def phase(self) -> str:
        return self.decision.phase

    @property
    def abstention_response(self) -> str | None:
        return self.decision.abstention_response


class GroundruleError(Exception):
    """Base class for configuration and transport errors."""


class ConfigurationError(GroundruleError):
    """The client is missing its server URL or API key, or a setting is out of range."""


class GroundruleUnavailable(GroundruleError):
    """The server could not be reached, timed out, or answered 5xx/429 after every retry.

    Raised only with `fail_open=False`; with the default `fail_open=True` the run carries on.
    """

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class GroundruleAPIError(GroundruleError):
    """The server rejected the request (4xx): bad input, a bad key, a run of another tenant.

    These are programming or configuration errors, not outages, so they are raised whatever
    `fail_open` says. `body` is the server's JSON answer (it names the field and the problem).
    """

    def __init__(self, status_code: int, body: Any, method: str = "", path: str = "") -> None:
        where = f" from {method} {path}" if method else ""
        super().__init__(f"{status_code}{where}: {body}")
        self.status_code = status_code
        self.body = body
        self.method = method
        self.path = path
