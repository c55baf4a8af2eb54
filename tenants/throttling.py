"""Per-API-key request limits for the REST API (DRF throttling over Django's cache).

The rate is API_RATE_LIMIT ("<n>/<s|min|hour|day>", empty or "off" for none), read on every request
so an operator's setting (and a test's override) applies without a restart. Over the limit, DRF
answers 429 with Retry-After. The counts live in the default cache: with several server processes,
point CACHE_URL at Redis so they share one count per key.
"""

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from .models import ApiKey


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
        return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        key = request.auth
        if not isinstance(key, ApiKey):
            return None  # unauthenticated calls are refused before they cost anything
        # The prefix as well as the id: test databases (and restored backups) reuse ids.
        return self.cache_format % {"scope": self.scope, "ident": f"{key.pk}:{key.prefix}"}

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
