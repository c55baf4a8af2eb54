"""One API call, without I/O: what to send, and what each outcome means (sans-IO).

The sync and the async client share this module and differ only in how they send a request and
how they wait (`_http.send` / `_http.send_async`), so retries, backoff, `Retry-After` and the
mapping of answers to results and errors exist once.

Which failures are retried depends on whether the server may already have acted on the request
(see "Retries" in docs/sdk.md):

- the request never left (connection refused, DNS, connect or pool timeout), or the server said
  it did not process it (429, 503), or our server failed inside its transaction (500, rolled
  back): retried for every call;
- the request may have been processed but the answer was lost (read/write timeout, connection
  dropped mid-request, 502, 504): retried only for calls that are harmless to repeat
  (`replayable`). Starting a run would create a second run and re-sending a grounding report
  would count its citations twice, which could turn a block into an allow.

Other 4xx answers are never retried. Whether an outage then fails open is the run's business
(`RunBase._go_offline`): this module only raises `GroundruleUnavailable`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
import json
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import httpx

from ._config import Config
from .errors import (
    API_ERRORS,
    GroundruleAPIError,
    GroundruleUnavailable,
    RateLimitError,
)

logger = logging.getLogger("groundrule")

_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRY_ALWAYS = frozenset({429, 500, 503})
_RETRY_IF_REPLAYABLE = frozenset({502, 504})
_MAX_TEXT_BODY = 2000


@dataclass(frozen=True, slots=True)
class Retry:
    """Wait `delay` seconds, then send the same request again."""

    delay: float
    cause: str


@dataclass(frozen=True, slots=True)
class Done:
    """The call succeeded; `body` is the server's JSON object."""

    body: dict[str, Any]


Outcome = httpx.Response | httpx.TransportError


def _jsonable(value: Any) -> Any:
    # Trace data (inputs, outputs, results, attributes) is whatever the agent had at hand; a
    # datetime or a dataclass there should not crash the agent.
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return list(value)
    return str(value)


class CheckOptions(TypedDict, total=False):
    """What `check_grounding` may set beside text and sources: the grounding rules of the same
    names (docs/verifier.md); the server's defaults hold for those left out."""

    entailment_threshold: float
    contradiction_threshold: float
    max_unverifiable_ratio: float
    nli_escalation: str  # "off" or "llm"
    nli_escalation_model: str  # e.g. "gpt-4o-mini"
    nli_escalation_max_claims: int


def check_payload(text: str, sources: Any, options: CheckOptions) -> dict[str, Any]:
    """The body of `POST grounding/check/`: text, sources, and the options the caller set."""
    unknown = set(options) - set(CheckOptions.__annotations__)
    if unknown:
        raise TypeError(f"check_grounding() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    # A lone string or mapping is iterable too: it would go out as one source per character or key.
    if isinstance(sources, (str, bytes, Mapping)):
        raise TypeError(
            f"check_grounding() sources must be a list of strings or {{'id', 'text', 'score'}} mappings, "
            f"not a single {type(sources).__name__}"
        )
    payload: dict[str, Any] = {"text": text, "sources": [s if isinstance(s, str) else dict(s) for s in sources]}
    payload.update({name: value for name, value in options.items() if value is not None})
    return payload


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, default=_jsonable).encode()


def retry_after(response: httpx.Response) -> float | None:
    """The `Retry-After` header in seconds (a number or an HTTP date), or None."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)  # HTTP dates are GMT
    return max(0.0, (when - dt.datetime.now(dt.timezone.utc)).total_seconds())


def backoff(config: Config, attempt: int) -> float:
    # Exponential backoff with "equal jitter": at least half the step, so a retry never comes
    # at once, and a random rest, so agents that failed together do not retry together.
    step = min(config.backoff_max, config.backoff_base * 2.0**attempt)
    return step / 2 + random.uniform(0, step / 2)


def parsed_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:_MAX_TEXT_BODY]


class Exchange:
    """The life of one API call: `method`, `path` and `content` to send, then `handle` each outcome.

    `handle` returns `Retry` (wait, then send again), returns `Done`, or raises the error the
    caller should see. A driver is a loop::

        exchange = Exchange(config, "POST", "runs/", payload, replayable=False)
        while True:
            try:
                outcome = http.request(exchange.method, exchange.path, content=exchange.content)
            except httpx.TransportError as error:
                outcome = error
            step = exchange.handle(outcome)
            if isinstance(step, Done):
                return step.body
            sleep(step.delay)
    """

    def __init__(
        self, config: Config, method: str, path: str, payload: dict[str, Any] | None, *, replayable: bool
    ) -> None:
        self.config = config
        self.method = method
        self.path = path
        self.content = encode(payload) if payload is not None else None
        self.replayable = replayable
        self.attempt = 0  # retries so far

    def handle(self, outcome: Outcome) -> Retry | Done:
        if isinstance(outcome, httpx.Response):
            delay = self._delay_after_response(outcome)
            if delay is None:
                return Done(self._result(outcome))
            cause = f"HTTP {outcome.status_code}"
        else:
            delay = self._delay_after_error(outcome)
            if delay is None:
                detail = str(outcome) or type(outcome).__name__
                raise GroundruleUnavailable(
                    f"{self.method} {self.path} failed: {type(outcome).__name__}: {detail}",
                    method=self.method,
                    path=self.path,
                ) from outcome
            cause = type(outcome).__name__
        self.attempt += 1
        logger.info(
            "Groundrule %s %s: %s; retry %d/%d in %.2fs",
            self.method,
            self.path,
            cause,
            self.attempt,
            self.config.max_retries,
            delay,
        )
        return Retry(delay, cause)

    # -- the retry policy ---------------------------------------------------------------------

    def _delay_after_response(self, response: httpx.Response) -> float | None:
        """Seconds to wait before sending again, or None to stop and interpret `response`."""
        status = response.status_code
        if self.attempt >= self.config.max_retries:
            return None
        if status not in _RETRY_ALWAYS and not (self.replayable and status in _RETRY_IF_REPLAYABLE):
            return None
        wait = retry_after(response)
        if wait is not None:
            # A server asking for longer than we would ever back off is down for longer than
            # an agent should stall: stop and let fail_open decide.
            return wait if wait <= self.config.backoff_max else None
        return backoff(self.config, self.attempt)

    def _delay_after_error(self, error: httpx.TransportError) -> float | None:
        if self.attempt >= self.config.max_retries:
            return None
        if isinstance(error, _NOT_SENT) or self.replayable:
            return backoff(self.config, self.attempt)
        return None

    # -- the answer ---------------------------------------------------------------------------

    def _result(self, response: httpx.Response) -> dict[str, Any]:
        status = response.status_code
        where = {"request_id": response.headers.get("X-Request-ID"), "method": self.method, "path": self.path}
        if status == 429:
            body = parsed_body(response)
            raise RateLimitError(
                f"{self.method} {self.path} answered 429: {body}", body=body, retry_after=retry_after(response), **where
            )
        if status >= 500:
            body = parsed_body(response)
            raise GroundruleUnavailable(
                f"{self.method} {self.path} answered {status}: {body}", status, body=body, **where
            )
        if not 200 <= status < 300:
            error_class = API_ERRORS.get(status, GroundruleAPIError)
            raise error_class(status, parsed_body(response), self.method, self.path, request_id=where["request_id"])
        try:
            data = response.json()
        except ValueError:
            # A proxy's HTML page, say: the server we want is not the one answering.
            raise GroundruleUnavailable(
                f"{self.method} {self.path} answered {status} with a body that is not JSON",
                status,
                body=response.text[:_MAX_TEXT_BODY],
                **where,
            ) from None
        if not isinstance(data, dict):
            raise GroundruleUnavailable(
                f"{self.method} {self.path} answered {status} with unexpected JSON: {data!r}",
                status,
                body=data,
                **where,
            )
        return data


#: The lists of one run the server pages through (`GET runs/{id}/<list>/`), oldest first.
RUN_LISTS = ("reports", "evaluations", "spans")
LIST_PAGE_SIZE = 500


def run_list_path(run_id: int, which: str) -> str:
    if which not in RUN_LISTS:
        raise ValueError(f"which must be one of {', '.join(RUN_LISTS)}; got {which!r}")
    return f"runs/{int(run_id)}/{which}/?page_size={LIST_PAGE_SIZE}"


def next_page_path(config: Config, body: Mapping[str, Any]) -> str | None:
    """The path, relative to the API root, of the page after ``body`` (its ``next`` link), or None at the end."""
    link = body.get("next")
    if not link:
        return None
    url, root = httpx.URL(link), httpx.URL(config.api_root.rstrip("/") + "/")
    if not url.path.startswith(root.path):
        raise GroundruleUnavailable(f"The server's next page {link!r} is outside {config.api_root}.")
    query = url.query.decode("ascii")
    return url.path[len(root.path) :] + (f"?{query}" if query else "")
