"""What the SDK raises.

`PolicyViolationError` is a governance outcome (a policy blocked the run); the others derive from
`GroundruleError` and are about talking to the server. They are kept apart so that
`except GroundruleError` never swallows a block by accident.

    GroundruleError
    ├── ConfigurationError
    ├── GroundruleAPIError            a 4xx answer: a bug or misconfiguration, raised whatever fail_open says
    │   ├── BadRequestError           400, the body names each bad field
    │   ├── AuthenticationError       401, a missing, unknown or revoked API key
    │   ├── PermissionDeniedError     403, the API key's scope does not allow the call
    │   ├── NotFoundError             404, no such object (or another tenant's)
    │   ├── ConflictError             409, e.g. a report to a run that is already completed
    │   └── PayloadTooLargeError      413, a body over the server's MAX_BODY_BYTES
    └── GroundruleUnavailable         unreachable, 5xx or 429 after every retry: fail_open decides
        └── RateLimitError            429, with the server's Retry-After in `retry_after`

Every error that comes from an HTTP answer carries `status_code`, `body` (the parsed JSON, or the
start of the text), `request_id` (the server's `X-Request-ID`: quote it when you report a problem;
the server's audit log carries the same id), `method` and `path`.
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

    Raised only with `fail_open=False` (and by `check_grounding` / `get_run`, which have no safe
    stand-in answer); with the default `fail_open=True` the run carries on. `status_code`,
    `body` and `request_id` are None when no answer came.
    """

    def __init__(
        self,
        message: str,
        status_code: int | None = None,
        *,
        body: Any = None,
        request_id: str | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body
        self.request_id = request_id
        self.method = method
        self.path = path


class RateLimitError(GroundruleUnavailable):
    """The server (or a proxy in front of it) answered 429 on every attempt.

    It stays a `GroundruleUnavailable`, as it always was, so `fail_open` still decides: being
    asked to slow down is an outage from the agent's point of view, not a bug to fix.
    `retry_after` is the server's `Retry-After` in seconds, or None.
    """

    def __init__(
        self,
        message: str,
        *,
        body: Any = None,
        request_id: str | None = None,
        method: str = "",
        path: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, 429, body=body, request_id=request_id, method=method, path=path)
        self.retry_after = retry_after


class GroundruleAPIError(GroundruleError):
    """The server rejected the request (4xx): bad input, a bad key, a run of another tenant.

    These are programming or configuration errors, not outages, so they are raised whatever
    `fail_open` says. `body` is the server's JSON answer (it names the field and the problem).
    The subclasses below are raised for the statuses they name; any other 4xx raises this class.
    """

    def __init__(
        self,
        status_code: int,
        body: Any,
        method: str = "",
        path: str = "",
        *,
        request_id: str | None = None,
    ) -> None:
        where = f" from {method} {path}" if method else ""
        tag = f" [request {request_id}]" if request_id else ""
        super().__init__(f"{status_code}{where}: {body}{tag}")
        self.status_code = status_code
        self.body = body
        self.method = method
        self.path = path
        self.request_id = request_id


class BadRequestError(GroundruleAPIError):
    """400: the body names each bad field, e.g. ``{"agent_name": ["This field may not be blank."]}``."""


class AuthenticationError(GroundruleAPIError):
    """401: the API key is missing, unknown or revoked."""


class PermissionDeniedError(GroundruleAPIError):
    """403: the API key's scope (agent, read, admin) or its pinned agents do not allow this call;
    the body says which scope it needs. A configuration error, like a wrong key."""


class NotFoundError(GroundruleAPIError):
    """404: no such object; another tenant's object is a 404 too, never a 403."""


class ConflictError(GroundruleAPIError):
    """409: the object's state forbids the call, e.g. reporting to a run that is already completed."""


class PayloadTooLargeError(GroundruleAPIError):
    """413: the request body is over the server's ``MAX_BODY_BYTES`` (1 MiB by default)."""


#: The class raised for each 4xx status; other 4xx answers raise `GroundruleAPIError` itself.
API_ERRORS: dict[int, type[GroundruleAPIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
}
