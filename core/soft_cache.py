"""The shared cache (CACHE_URL, Redis) speeds requests up and never decides whether they are answered.

What reads it on the request path (the API key throttle, replica stickiness, the grounding check's
in-flight slots, the webhook subscriptions) goes through these helpers: when the cache does not
answer, the caller gets its fail-open default and the API keeps answering. A warning is logged at
most once a minute per use, naming the exception's class only (a Redis URL may hold a password).
/readyz reports the cache's state (``check_cache``), so an operator sees the outage.
"""

import logging
import threading
import time
import uuid

from django.core.cache import cache

logger = logging.getLogger("groundrule.cache")

#: At most one warning a minute per use: an outage under load would otherwise log every request.
WARN_EVERY_SECONDS = 60.0

_last_warned: dict[str, float] = {}
_lock = threading.Lock()


def cache_failed(use: str, exc: BaseException) -> None:
    """Log, rate-limited, that the cache failed for ``use`` and what the caller does instead."""
    now = time.monotonic()
    with _lock:
        if now - _last_warned.get(use, -WARN_EVERY_SECONDS) < WARN_EVERY_SECONDS:
            return
        _last_warned[use] = now
    logger.warning("cache unavailable (%s) for %s: failing open", type(exc).__name__, use)


_SAME = object()


def soft_get(key: str, default, *, use: str, on_failure=_SAME):
    """``cache.get(key, default)``; when the cache does not answer, ``on_failure`` (``default`` unless given)."""
    try:
        return cache.get(key, default)
    except Exception as exc:
        cache_failed(use, exc)
        return default if on_failure is _SAME else on_failure


def soft_set(key: str, value, timeout: float, *, use: str) -> None:
    try:
        cache.set(key, value, timeout=timeout)
    except Exception as exc:
        cache_failed(use, exc)


def soft_delete(key: str, *, use: str) -> None:
    try:
        cache.delete(key)
    except Exception as exc:
        cache_failed(use, exc)


def check_cache() -> dict:
    """/readyz: a write and a read of the default cache. With the in-process cache, always ok."""
    key = f"groundrule:readyz:{uuid.uuid4().hex}"
    cache.set(key, 1, timeout=5)
    if cache.get(key) != 1:
        raise LookupError("cache lost a value it was just given")
    cache.delete(key)
    backend = type(cache).__name__
    return {"backend": backend}
