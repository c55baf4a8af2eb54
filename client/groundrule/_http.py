"""Sending one API call with retries, shared by the sync and the async client.

Which failures are retried depends on whether the server may already have acted on the request
(see "Retries" in the README):

- the request never left (connection refused, DNS, connect or pool timeout), or the server said
  it did not process it (429, 503), or our server failed inside its transaction (500, rolled
  back): retried for every call;
- the request may have been processed but the answer was lost (read/write timeout, connection
  dropped mid-request, 502, 504): retried only for calls that are harmless to repeat
  (`replayable`). Starting a run would create a second run and re-sending a grounding report
  would count its citations twice, which could turn a block into an allow.

Other 4xx answers are never retried.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import email.utils
import json
import logging
import random
import time
from typing import Any

import httpx

from ._config import Config
from .errors import GroundruleAPIError, GroundruleUnavailable

logger = logging.getLogger("groundrule")

_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRY_ALWAYS = frozenset({429, 500, 503})
_RETRY_IF_REPLAYABLE = frozenset({502, 504})


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


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, default=_jsonable).encode()


def _retry_after(response: httpx.Response) -> float | None:
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
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def _backoff(config: Config, attempt: int) -> float:
    # Exponential backoff with "equal jitter": at least half the step, so a retry never comes
    # at once, and a random rest, so agents that failed together do not retry together.
    step = min(config.backoff_max, config.backoff_base * 2.0**attempt)
    return step / 2 + random.uniform(0, step / 2)


def _next_delay(
    config: Config,
    attempt: int,
    replayable: bool,
    response: httpx.Response | None = None,
    error: Exception | None = None,
) -> float | None:
    """Seconds to wait before the next attempt, or None to stop here."""
    if attempt >= config.max_retries:
        return None
    if response is not None:
        status = response.status_code
        if status not in _RETRY_ALWAYS and not (replayable and status in _RETRY_IF_REPLAYABLE):
            return None
        wait = _retry_after(response)
        if wait is not None:
            # A server asking for longer than we would ever back off is down for longer than
            # an agent should stall: stop and let fail_open decide.
            return wait if wait <= config.backoff_max else None
        return _backoff(config, attempt)
    if isinstance(error, _NOT_SENT) or (replayable and isinstance(error, httpx.TransportError)):
        return _backoff(config, attempt)
    return None


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:2000]


def _result(method: str, path: str, response: httpx.Response) -> dict[str, Any]:
    status = response.status_code
    if status == 429 or status >= 500:
        raise GroundruleUnavailable(f"{method} {path} answered {status}: {_body(response)}", status_code=status)
    if not 200 <= status < 300:
        raise GroundruleAPIError(status, _body(response), method, path)
    try:
        data = response.json()
    except ValueError:
        # A proxy's HTML page, say: the server we want is not the one answering.
        raise GroundruleUnavailable(f"{method} {path} answered {status} with a body that is not JSON")
    if not isinstance(data, dict):
        raise GroundruleUnavailable(f"{method} {path} answered {status} with unexpected JSON: {data!r}")
    return data


def _unavailable(method: str, path: str, error: Exception) -> GroundruleUnavailable:
    detail = str(error) or type(error).__name__
    return GroundruleUnavailable(f"{method} {path} failed: {type(error).__name__}: {detail}")


def _log_retry(method: str, path: str, cause: str, delay: float, attempt: int, config: Config) -> None:
    logger.info(
        "Groundrule %s %s: %s; retry %d/%d in %.2fs", method, path, cause, attempt + 1, config.max_retries, delay
    )


def send(
    http: httpx.Client, config: Config, method: str, path: str, payload: dict[str, Any] | None, *, replayable: bool
) -> dict[str, Any]:
    content = encode(payload) if payload is not None else None
    attempt = 0
    while True:
        try:
            response = http.request(method, path, content=content)
        except httpx.TransportError as error:
            delay = _next_delay(config, attempt, replayable, error=error)
            if delay is None:
                raise _unavailable(method, path, error) from error
            cause = type(error).__name__
        else:
            delay = _next_delay(config, attempt, replayable, response=response)
            if delay is None:
                return _result(method, path, response)
            cause = f"HTTP {response.status_code}"
        _log_retry(method, path, cause, delay, attempt, config)
        time.sleep(delay)
        attempt += 1


async def send_async(
    http: httpx.AsyncClient, config: Config, method: str, path: str, payload: dict[str, Any] | None, *, replayable: bool
) -> dict[str, Any]:
    content = encode(payload) if payload is not None else None
    attempt = 0
    while True:
        try:
            response = await http.request(method, path, content=content)
        except httpx.TransportError as error:
            delay = _next_delay(config, attempt, replayable, error=error)
            if delay is None:
                raise _unavailable(method, path, error) from error
            cause = type(error).__name__
        else:
            delay = _next_delay(config, attempt, replayable, response=response)
            if delay is None:
                return _result(method, path, response)
            cause = f"HTTP {response.status_code}"
        _log_retry(method, path, cause, delay, attempt, config)
        await asyncio.sleep(delay)
        attempt += 1


def client_options(config: Config) -> dict[str, Any]:
    from . import __version__

    return {
        "base_url": config.api_root + "/",
        "timeout": config.timeout,
        "headers": {
            "Authorization": f"Bearer {config.api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"groundrule-python/{__version__}",
        },
    }
