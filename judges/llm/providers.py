"""Calling the judge model through the providers' official SDKs.

:func:`judge` never raises and never blocks longer than its time budget: every outcome is a
:class:`JudgeResult` whose ``status`` says what happened (docs/grounding-policies.md, "Graceful Degradation"):

=================  ===========================================================================
``ok``             the model answered and a score was read from the answer
``unparseable``    the model answered but no score could be read; ``score`` is the neutral 0.5
``no_api_key``     no key configured for the provider; no request was made; ``score`` is None
``error``          the SDK or the API failed (HTTP 4xx/5xx, connection refused, bad response,
                   unsupported model); ``score`` is None; ``error`` is a short, key-free message
``timeout``        the time budget ran out; ``score`` is None
=================  ===========================================================================

SDKs: ``openai.OpenAI(...).chat.completions.create``, ``anthropic.Anthropic(...).messages.create``
and ``groq.Groq(...).chat.completions.create``. The key is always passed explicitly (never read
from the process environment). The base URL is passed when given; otherwise each SDK reads its own
variable (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GROQ_BASE_URL``) and falls back to the
public endpoint. Note the URL shapes the SDKs expect: OpenAI's base URL *includes* ``/v1``
(``http://host:port/v1`` → ``POST /v1/chat/completions``); Anthropic's and Groq's do not
(``http://host:port`` → ``POST /v1/messages`` and ``POST /openai/v1/chat/completions``).

Retries and the time budget: the SDK clients are built with ``max_retries=0`` and :func:`judge`
retries itself, so that ``timeout`` is a *total* wall-clock budget for the whole judgement (all
attempts and back-off waits), not a per-attempt one. Each attempt gets the time that is left. The
budget starts once the client exists: a fresh process's one-off SDK import (~0.1-0.5 s; call
:func:`preload_sdks` at worker start to pay it early) is not charged to the provider.
Retried: connection errors and HTTP 408/409/429/5xx (an ``x-should-retry`` header decides when
present), at most ``max_retries`` times, and only when the wait (``retry-after-ms`` /
``retry-after`` if the server sends one, else 0.25 s doubling) still fits in the budget. An attempt
that times out has used the budget up, so a timeout is never retried. The SDKs' own retry loops
would honour a ``retry-after`` of a minute or more (Anthropic's without limit), which a judge that
runs inside a request must not do.

Clients are cached per (provider, base URL, sha256 of the key, timeout) in a small thread-safe LRU
so repeated judgements reuse connections; the cache is dropped in a forked child (Celery prefork).
Keys are never logged and are scrubbed from every error message.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import random
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from core import outbound
from core.vocabulary import MODEL_PROVIDERS

from .parse import NEUTRAL_SCORE, parse_score
from .pricing import estimate_cost
from .prompt import build_prompt, cache_key

log = logging.getLogger("judges.llm")

PROVIDERS = ("openai", "anthropic", "groq")

SECRET_FOR_PROVIDER = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "groq": "GROQ_API_KEY"}
BASE_URL_SECRET = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL", "groq": "GROQ_BASE_URL"}

STATUS_OK = "ok"
STATUS_UNPARSEABLE = "unparseable"
STATUS_NO_API_KEY = "no_api_key"
STATUS_ERROR = "error"
STATUS_TIMEOUT = "timeout"
STATUSES = (STATUS_OK, STATUS_UNPARSEABLE, STATUS_NO_API_KEY, STATUS_ERROR, STATUS_TIMEOUT)

MAX_TOKENS = 32  # the answer is one short line ("SCORE: 0.85" is ~6 tokens)
TEMPERATURE = 0.0
RAW_TEXT_CHARS = 500
ERROR_CHARS = 200
CLIENT_CACHE_SIZE = 32
RETRY_BASE_DELAY = 0.25
RETRY_MAX_DELAY = 4.0
MIN_ATTEMPT_SECONDS = 0.05  # don't start an attempt with less time than this left


def provider_for_model(model: str) -> str:
    """``"openai"`` for gpt-*, ``"anthropic"`` for claude-*, ``"groq"`` for llama-* and mixtral-*.

    Raises ``ValueError`` for any other model name.
    """
    name = model.strip().lower() if isinstance(model, str) else ""
    for prefix, provider in MODEL_PROVIDERS:
        if name.startswith(prefix) and len(name) > len(prefix):
            return provider
    raise ValueError(
        f"Unsupported judge model {model!r}: expected a name starting with gpt-, claude-, llama- or mixtral-"
    )


# ---------------------------------------------------------------------------------------------
# Result


@dataclass
class JudgeResult:
    status: str
    score: float | None
    model: str
    provider: str | None
    latency_ms: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    raw_text: str = ""
    error: str = ""
    attempts: int = 0

    METADATA_KEYS = (
        "status",
        "score",
        "model",
        "provider",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "attempts",
        "raw_text",
        "error",
    )

    @property
    def ok(self) -> bool:
        """True when the judge produced a score (``ok`` or the neutral ``unparseable`` 0.5)."""
        return self.score is not None

    def to_metadata(self) -> dict[str, Any]:
        """A JSON-serialisable dict for an evaluation's metadata; always the keys of ``METADATA_KEYS``."""
        return {key: getattr(self, key) for key in self.METADATA_KEYS}


# ---------------------------------------------------------------------------------------------
# Secrets hygiene

# Key-shaped tokens (sk-..., sk-ant-..., gsk_...) and masked echoes of a key ("sk-abc***wxyz").
_KEYLIKE = re.compile(r"\b(?:sk|gsk|xai)[-_][A-Za-z0-9*._\-]{6,}|\S*\*{3,}\S*", re.IGNORECASE)


KEY_FRAGMENT_CHARS = 8


def _has_key_fragment(text: str, api_key: str) -> bool:
    if len(api_key) < KEY_FRAGMENT_CHARS:
        return False
    return any(api_key[i : i + KEY_FRAGMENT_CHARS] in text for i in range(len(api_key) - KEY_FRAGMENT_CHARS + 1))


def _scrub(text: str, api_key: str | None) -> str:
    """A short single-line message with the key (and anything key-shaped) removed.

    If any 8-character piece of the key survives (an escaped or re-encoded echo of it), the whole
    message is withheld rather than risk leaking the key.
    """
    text = str(text)
    if api_key:
        text = text.replace(api_key, "[redacted]")
    text = _KEYLIKE.sub("[redacted]", text)
    if api_key and _has_key_fragment(text, api_key):
        return "[details withheld: they contained part of the API key]"
    text = " ".join(text.split())
    return text[:ERROR_CHARS]


def _key_hash(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()[:24]


# ---------------------------------------------------------------------------------------------
# Client cache

_cache_lock = threading.Lock()
_clients: OrderedDict[tuple, Any] = OrderedDict()
_cache_pid = os.getpid()


def clear_client_cache() -> None:
    """Forget every cached SDK client (tests; key rotation)."""
    global _cache_pid
    with _cache_lock:
        _clients.clear()
        _cache_pid = os.getpid()


def _new_client(provider: str, api_key: str, base_url: str | None, timeout: float) -> Any:
    # Every SDK gets the guarded HTTP client (core/outbound.py): each connection's address is
    # checked (no loopback, private or metadata addresses unless allowed) and no redirect is followed.
    if provider == "openai":
        import openai

        return openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=outbound.guarded_client(timeout=timeout),
        )
    if provider == "anthropic":
        import anthropic

        return anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=outbound.guarded_client(timeout=timeout, library="httpx2"),
        )
    if provider == "groq":
        import groq

        return groq.Groq(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=outbound.guarded_client(timeout=timeout),
        )
    raise ValueError(f"unknown provider {provider!r}")


def get_client(provider: str, api_key: str, base_url: str | None, timeout: float) -> Any:
    """A cached SDK client for these settings (thread-safe; SDK clients may be shared by threads)."""
    global _cache_pid
    # With no explicit base URL the SDK reads its own variable, so that value is part of the key.
    effective_url = base_url or "env:" + (os.environ.get(BASE_URL_SECRET.get(provider, ""), "") or "")
    # The allow-list is part of the key: a client is built for the guard settings it was made under.
    key = (provider, effective_url, _key_hash(api_key), float(timeout), outbound.allowed_entries())
    with _cache_lock:
        if _cache_pid != os.getpid():  # forked: the parent's connection pools are not ours
            _clients.clear()
            _cache_pid = os.getpid()
        client = _clients.get(key)
        if client is not None:
            _clients.move_to_end(key)
            return client
    client = _new_client(provider, api_key, base_url, timeout)
    with _cache_lock:
        existing = _clients.get(key)
        if existing is not None:
            return existing
        _clients[key] = client
        while len(_clients) > CLIENT_CACHE_SIZE:
            _clients.popitem(last=False)  # evicted clients close when garbage-collected
    return client


def preload_sdks(providers: tuple[str, ...] = PROVIDERS) -> None:
    """Import the provider SDKs now (e.g. at worker start) instead of on the first judgement."""
    for provider in providers:
        _sdk_errors(provider)


# ---------------------------------------------------------------------------------------------
# One call per provider


@dataclass
class _Reply:
    text: str
    input_tokens: int | None
    output_tokens: int | None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _call(
    client: Any, provider: str, model: str, system: str, user: str, timeout: float, max_tokens: int = MAX_TOKENS
) -> _Reply:
    if provider == "anthropic":
        message = client.messages.create(
            model=model,
            max_tokens=max_tokens,
            system=system,
            messages=[{"role": "user", "content": user}],
            timeout=timeout,
            # anthropic 2.x has no `temperature` parameter (the API dropped it); the strict
            # one-line answer format keeps the judge's output stable instead.
        )
        text = "".join(
            getattr(block, "text", "") or ""
            for block in (message.content or [])
            if getattr(block, "type", None) == "text"
        )
        usage = getattr(message, "usage", None)
        input_tokens = _int_or_none(getattr(usage, "input_tokens", None))
        if input_tokens is not None:
            for extra in ("cache_creation_input_tokens", "cache_read_input_tokens"):
                input_tokens += _int_or_none(getattr(usage, extra, None)) or 0
        return _Reply(text, input_tokens, _int_or_none(getattr(usage, "output_tokens", None)))

    # openai and groq share the chat-completions shape
    completion = client.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=TEMPERATURE,
        max_tokens=max_tokens,
        timeout=timeout,
    )
    choices = getattr(completion, "choices", None) or []
    text = ""
    if choices:
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None) or ""
    usage = getattr(completion, "usage", None)
    return _Reply(
        text if isinstance(text, str) else str(text),
        _int_or_none(getattr(usage, "prompt_tokens", None)),
        _int_or_none(getattr(usage, "completion_tokens", None)),
    )


# ---------------------------------------------------------------------------------------------
# Error classification (the three SDKs share the same exception hierarchy names)


def _sdk_errors(provider: str) -> Any:
    if provider == "openai":
        import openai

        return openai
    if provider == "anthropic":
        import anthropic

        return anthropic
    import groq

    return groq


def _retry_wait(response: Any) -> tuple[bool | None, float | None]:
    """(server says retry?, server-requested wait in seconds) from response headers."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None, None
    should = headers.get("x-should-retry")
    verdict = True if should == "true" else False if should == "false" else None
    wait = None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / divisor
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            wait = value
            break
    return verdict, wait


def _status_message(provider: str, err: Any, api_key: str) -> str:
    status = getattr(err, "status_code", None)
    body = getattr(err, "body", None)
    detail = ""
    if isinstance(body, dict):
        error = body.get("error")
        inner = error if isinstance(error, dict) else body
        kind = inner.get("type") or inner.get("code") or ""
        msg = inner.get("message") or ""
        detail = f"{kind}: {msg}" if kind and msg else str(kind or msg)
    # A non-JSON body (an HTML error page, some other service behind a mistyped base URL) is not
    # echoed: only the status is reported, so a tenant-set base URL can't read arbitrary pages.
    return f"{provider} API error: HTTP {status}" + (f" ({_scrub(detail, api_key)})" if detail else "")


def _backoff(attempt: int) -> float:
    return min(RETRY_BASE_DELAY * (2**attempt), RETRY_MAX_DELAY) * (1 - 0.25 * random.random())


# ---------------------------------------------------------------------------------------------
# The judge


def _clean_optional(value: str | None) -> str | None:
    if value is None:
        return None
    value = str(value).strip()
    return value or None


@dataclass
class Completion:
    """What one model call gave back: the whole answer text, or the status that says why not."""

    status: str  # ok | no_api_key | error | timeout
    text: str
    model: str
    provider: str | None
    latency_ms: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    error: str = ""
    attempts: int = 0


def complete(
    *,
    model: str,
    system: str,
    user: str,
    api_key: str | None,
    base_url: str | None = None,
    timeout: float = 10.0,
    max_retries: int = 1,
    max_tokens: int = MAX_TOKENS,
    purpose: str = "LLM judge",
) -> Completion:
    """One chat call to ``model`` through its provider's SDK, within ``timeout`` in total; never raises.

    The retries, time budget, client cache and key scrubbing described in the module docstring
    apply; :func:`judge` and the verifier's escalation (judges/escalation.py) both call this.
    ``purpose`` only names the caller in the log line of a failure.
    """
    started = time.perf_counter()
    model = model.strip() if isinstance(model, str) else ""

    def elapsed_ms() -> float:
        return round((time.perf_counter() - started) * 1000.0, 1)

    try:
        provider = provider_for_model(model)
    except ValueError as err:
        return Completion(STATUS_ERROR, "", model, None, elapsed_ms(), error=_scrub(str(err), None))

    api_key = _clean_optional(api_key)
    if api_key is None:
        return Completion(
            STATUS_NO_API_KEY,
            "",
            model,
            provider,
            elapsed_ms(),
            error=f"No {SECRET_FOR_PROVIDER[provider]} configured; {purpose} skipped",
        )

    base_url = _clean_optional(base_url)
    try:
        timeout = float(timeout)
        if not math.isfinite(timeout) or timeout <= 0:
            raise ValueError
    except (TypeError, ValueError):
        timeout = 10.0
    try:
        max_retries = max(0, int(max_retries))
    except (TypeError, ValueError):
        max_retries = 0

    attempts = 0
    last_status, last_error = STATUS_ERROR, "no attempt made"
    try:
        client = get_client(provider, api_key, base_url, timeout)
        sdk = _sdk_errors(provider)
        # The budget starts now: the one-off SDK import and client construction (up to ~0.5 s in a
        # fresh process; see preload_sdks) are local work, not the provider's latency.
        deadline = time.perf_counter() + timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining < MIN_ATTEMPT_SECONDS:
                if attempts == 0:
                    last_status, last_error = STATUS_TIMEOUT, "time budget exhausted before the request"
                break
            attempts += 1
            retry, wait = False, None
            try:
                reply = _call(client, provider, model, system, user, remaining, max_tokens)
            except sdk.APITimeoutError:
                last_status, last_error = STATUS_TIMEOUT, f"{provider} API timed out after {timeout:g}s"
                break  # the attempt used up the budget
            except sdk.APIConnectionError as err:
                last_status = STATUS_ERROR
                cause = err.__cause__
                last_error = f"{provider} API connection error" + (f" ({type(cause).__name__})" if cause else "")
                retry = True
            except sdk.APIStatusError as err:
                last_status, last_error = STATUS_ERROR, _status_message(provider, err, api_key)
                verdict, wait = _retry_wait(getattr(err, "response", None))
                code = getattr(err, "status_code", 0) or 0
                retry = verdict if verdict is not None else (code in (408, 409, 429) or code >= 500)
            else:
                return Completion(
                    STATUS_OK,
                    reply.text,
                    model,
                    provider,
                    elapsed_ms(),
                    input_tokens=reply.input_tokens,
                    output_tokens=reply.output_tokens,
                    cost_usd=estimate_cost(model, reply.input_tokens, reply.output_tokens),
                    attempts=attempts,
                )
            if not retry or attempts > max_retries:
                break
            delay = wait if wait is not None else _backoff(attempts - 1)
            if time.perf_counter() + delay + MIN_ATTEMPT_SECONDS > deadline:
                break  # no time left to wait and try again
            time.sleep(delay)
    except Exception as err:
        last_status = STATUS_ERROR
        last_error = f"{provider} judge failed ({type(err).__name__}): {_scrub(str(err), api_key)}"

    result = Completion(
        last_status,
        "",
        model,
        provider,
        elapsed_ms(),
        error=last_error[:ERROR_CHARS],  # every detail in it was scrubbed of the key
        attempts=attempts,
    )
    log.warning(
        "%s %s (provider=%s model=%s attempts=%d): %s",
        purpose,
        result.status,
        provider,
        model,
        attempts,
        result.error,
    )
    return result


def judge(
    *,
    model: str,
    output: str,
    citations: list[str] | None,
    sources: list[dict | str] | None,
    criteria: str = "",
    api_key: str | None,
    base_url: str | None = None,
    timeout: float = 10.0,
    max_retries: int = 1,
) -> JudgeResult:
    """Ask ``model`` how well ``output`` is grounded in ``sources``; never raises.

    ``timeout`` is the total budget in seconds (all attempts); ``max_retries`` the number of extra
    attempts allowed for retryable failures. See the module docstring for the statuses.
    """
    system, user = build_prompt(output, citations, sources, criteria)
    done = complete(
        model=model,
        system=system,
        user=user,
        api_key=api_key,
        base_url=base_url,
        timeout=timeout,
        max_retries=max_retries,
    )
    if done.status != STATUS_OK:
        return JudgeResult(
            done.status, None, done.model, done.provider, done.latency_ms, error=done.error, attempts=done.attempts
        )
    score, parsed = parse_score(done.text)
    return JudgeResult(
        STATUS_OK if parsed else STATUS_UNPARSEABLE,
        score if parsed else NEUTRAL_SCORE,
        done.model,
        done.provider,
        done.latency_ms,
        input_tokens=done.input_tokens,
        output_tokens=done.output_tokens,
        cost_usd=done.cost_usd,
        raw_text=done.text[:RAW_TEXT_CHARS],
        error="" if parsed else "Unparseable judge response; defaulted to 0.5",
        attempts=done.attempts,
    )


def request_cache_key(
    *, model: str, output: str, citations: list[str] | None, sources: list[dict | str] | None, criteria: str = ""
) -> str:
    """:func:`cache_key` of the request :func:`judge` would send for these inputs."""
    system, user = build_prompt(output, citations, sources, criteria)
    return cache_key(model.strip() if isinstance(model, str) else "", system, user)


__all__ = [
    "BASE_URL_SECRET",
    "Completion",
    "JudgeResult",
    "PROVIDERS",
    "SECRET_FOR_PROVIDER",
    "STATUSES",
    "clear_client_cache",
    "complete",
    "get_client",
    "judge",
    "preload_sdks",
    "provider_for_model",
    "request_cache_key",
]
