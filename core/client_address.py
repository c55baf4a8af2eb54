"""The address a request came from, as far as the deployment lets us trust it.

Behind a reverse proxy every request's REMOTE_ADDR is the proxy. Each proxy appends the address it
was reached from to X-Forwarded-For, so with TRUSTED_PROXY_COUNT proxies in front of us the client is
the entry that many places from the right; anything further left was written by the client itself
and proves nothing. With no trusted proxies the header is ignored (docs/security.md, "Sign-in").
"""

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    # Fewer entries than proxies: the request did not come through all of them (or a proxy is
    # misconfigured); the nearest address we can vouch for is the one that connected.
    if len(forwarded) < hops:
        return remote
    try:
        return str(ipaddress.ip_address(forwarded[-hops]))
    except ValueError:
        return remote
