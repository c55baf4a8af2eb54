"""Per-API-key request limits for the REST API (DRF throttling over Django's cache).

The rate is API_RATE_LIMIT ("<n>/<s|min|hour|day>", empty or "off" for none), read on every request
so an operator's setting (and a test's override) applies without a restart. Over the limit, DRF
answers 429 with Retry-After. The counts live in the default cache: with several server processes,
point CACHE_URL at Redis so they share one count per key. When that cache does not answer, the
throttle lets the request through and logs it (core/soft_cache.py): a Redis outage costs the rate
limit for its duration, never the API.

``check_slot`` bounds how many grounding checks one key has in flight at once
(GROUNDING_CHECK_MAX_IN_FLIGHT): a check costs up to a second of CPU (judges/budget.py), and a
count of requests per minute does not stop one key from holding every worker at the same moment.
"""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

from core.soft_cache import cache_failed

from .models import ApiKey

#: How long an in-flight slot is held at most: a worker killed in the middle of a check frees its
#: slot when the lease runs out (a check is bounded well below this: JUDGE_SYNC_BUDGET_SECONDS).
SLOT_LEASE_SECONDS = 120


class ApiKeyRateThrottle(SimpleRateThrottle):
    scope = "api_key"

    def get_rate(self):
        rate = (getattr(settings, "API_RATE_LIMIT", "") or "").strip()
        return None if rate.lower() in ("", "off", "none") else rate

    def allow_request(self, request, view):
        # Re-read per request: SimpleRateThrottle fixes the rate when the throttle is built.
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        try:
            return super().allow_request(request, view)
        except Exception as exc:  # the cache is down: fail open, rate-limited warning
            cache_failed("the API key throttle", exc)
            return True

    def get_cache_key(self, request, view):
        key = request.auth
        if not isinstance(key, ApiKey):
            return None  # unauthenticated calls are refused before they cost anything
        return self.cache_format % {"scope": self.scope, "ident": _key_ident(key)}

    def wait(self):
        """Seconds until this key may call again: the `Retry-After` of the 429.

        DRF's estimate is None, so the 429 carried no Retry-After, whenever the key's history holds
        more calls than the limit now allows: right after an operator lowers API_RATE_LIMIT (read on
        every request) or when processes raced past it. The next call is allowed once all but
        `num_requests - 1` of the recorded calls have aged out; the history is newest first.
        """
        if self.num_requests <= 0 or not self.history:
            return self.duration
        if len(self.history) < self.num_requests:
            return super().wait()
        return max(0.0, self.duration - (self.now - self.history[self.num_requests - 1]))


def _key_ident(key: ApiKey) -> str:
    # The prefix as well as the id: test databases (and restored backups) reuse ids.
    return f"{key.pk}:{key.prefix}"


@contextmanager
def check_slot(key: ApiKey | None, limit: int) -> Iterator[bool]:
    """Holds one of ``limit`` in-flight slots of ``key`` for the block; yields False when all are taken.

    Each slot is a cache entry added only if absent (Redis SET NX: atomic across processes and nodes
    when CACHE_URL is set; per process with the in-process cache) with a lease, released at the end
    if still ours. The cache down: yields True (fail open) and logs. ``limit`` 0 or less: no limit.
    """
    if limit <= 0 or not isinstance(key, ApiKey):  # a session is a person at a page, not an agent's loop
        yield True
        return
    token = uuid.uuid4().hex
    held = None
    try:
        for slot in range(limit):
            name = f"groundrule:check-slot:{_key_ident(key)}:{slot}"
            if cache.add(name, token, timeout=SLOT_LEASE_SECONDS):
                held = name
                break
    except Exception as exc:
        cache_failed("grounding check slots", exc)
        yield True
        return
    try:
        yield held is not None
    finally:
        if held is not None:
            try:
                if cache.get(held) == token:
                    cache.delete(held)
            except Exception as exc:  # the lease runs out by itself
                cache_failed("grounding check slots", exc)
