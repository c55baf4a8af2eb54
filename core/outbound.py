"""Outbound HTTP the server makes on a tenant's behalf (webhooks): never to our own network.

Minimal version with the agreed API, `check_url(url)` and `guarded_client(**kwargs)`; a fuller
guard is being written alongside and replaces this one at merge.

A URL is refused when its host resolves to a loopback, private, link-local, multicast, reserved or
unspecified address, unless the host is in the allow-list: ``allowed`` when given, else
OUTBOUND_ALLOWED_HOSTS (and JUDGE_BASE_URL_ALLOWED_HOSTS, its older name). A name that does not
resolve yet passes at save time; it is checked again on connect. The client follows no redirects
(a redirect could lead anywhere) and checks the address again when it connects.
"""

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

import httpx
from django.conf import settings


class OutboundRefused(Exception):
    """The URL may not be called from this server; the message says why (safe to show)."""


def _allowed_hosts(allowed: Iterable[str] | None) -> frozenset[str]:
    if allowed is None:
        allowed = [*getattr(settings, "OUTBOUND_ALLOWED_HOSTS", []), *getattr(settings, "JUDGE_BASE_URL_ALLOWED_HOSTS", [])]
    return frozenset(h.strip().lower() for h in allowed if h.strip())


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _check_host(host: str, port: int | None, allowed: frozenset[str], *, at_connect: bool) -> None:
    if host.lower() in allowed:
        return
    try:
        infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        if at_connect:
            raise OutboundRefused(f"Host {host} does not resolve.") from None
        return
    for info in infos:
        if not _is_public(info[4][0]):
            raise OutboundRefused(f"Host {host} resolves to a non-public address.")


def check_url(url: str, *, allowed: Iterable[str] | None = None) -> None:
    """Raises OutboundRefused unless ``url`` is an http(s) URL to a public (or allow-listed) host."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise OutboundRefused("Not a valid URL.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OutboundRefused("Must be an http(s) URL with a host.")
    if parts.username or parts.password:
        raise OutboundRefused("Must not carry credentials in the URL.")
    _check_host(parts.hostname, port, _allowed_hosts(allowed), at_connect=False)


class _GuardedTransport(httpx.HTTPTransport):
    """Checks the host again at request time: DNS may have changed since the URL was saved."""

    def __init__(self, allowed: frozenset[str]):
        super().__init__()
        self.allowed = allowed

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        _check_host(request.url.host, request.url.port, self.allowed, at_connect=True)
        return super().handle_request(request)


def guarded_client(*, timeout: float | None = None, allowed: Iterable[str] | None = None) -> httpx.Client:
    return httpx.Client(transport=_GuardedTransport(_allowed_hosts(allowed)), timeout=timeout,
                        follow_redirects=False, trust_env=False)
