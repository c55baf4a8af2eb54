"""Outbound requests to URLs a tenant controls (provider base URLs, webhooks): never to our own network.

A tenant may point the judge at its own gateway. Left open, that let a tenant make the server call
loopback, private, link-local or cloud-metadata addresses and read the answers back (issue 14).
Two checks, one rule:

* :func:`check_url` when the URL is saved (a 400 naming the field): scheme, host, numeric host
  forms (``2130706433``, ``0x7f000001``, ``[::1]``, ``::ffff:127.0.0.1``) and, when the name
  resolves, every address it resolves to.
* :func:`guarded_client` when connecting: its transport resolves the host itself, checks each
  address and connects to the address it checked, so a name that resolved to a public address at
  save time and to 127.0.0.1 now (DNS rebinding) is still refused. Redirects are never followed
  (a 3xx is the answer), so an allowed host cannot bounce a request, body and key included, to a
  refused one.

The operator may allow hosts (by name), addresses or networks (CIDR), each on every port or on one
(``host:port``, ``CIDR:port``, ``[IPv6]:port``; core/allowlist.py), in ``OUTBOUND_ALLOWED_HOSTS``
(``JUDGE_BASE_URL_ALLOWED_HOSTS`` is read too, its old name); an allowed name is connected to
whatever it resolves to. The port is checked with the address, so ``127.0.0.1:11434`` lets a
tenant reach a local model server and not the Redis broker on 6379 of the same host. Proxies from
the environment are not used by the guarded client: the check would then see the proxy, not the
target.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Iterable
from functools import cache
from urllib.parse import urlsplit

import httpcore
import httpcore2
import httpx
import httpx2
from django.conf import settings

from .allowlist import AllowList, default_port

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata services: link-local or private already, named so the refusal says what they are.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "fd00:ec2::254",
        "100.100.100.200",
    )
)
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata", "instance-data"})
SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, not the internet
_LEGACY_IPV4 = re.compile(r"^[0-9][0-9a-fA-FxX.]*$")  # 2130706433, 0x7f000001, 0177.0.0.1, 127.1


class OutboundRefused(ValueError):
    """A URL or address the server will not connect to; the message says why."""


def allowed_entries() -> tuple[str, ...]:
    """The operator's allow-list: settings.OUTBOUND_ALLOWED_HOSTS, or the environment without Django."""
    if settings.configured:
        return tuple(getattr(settings, "OUTBOUND_ALLOWED_HOSTS", ())) + tuple(
            getattr(settings, "JUDGE_BASE_URL_ALLOWED_HOSTS", ())
        )
    # The provider library also runs without Django (its tests do).
    raw = f"{os.environ.get('OUTBOUND_ALLOWED_HOSTS', '')},{os.environ.get('JUDGE_BASE_URL_ALLOWED_HOSTS', '')}"
    return tuple(h.strip() for h in raw.split(",") if h.strip())


def refused_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public internet address we would call, or None if it is one."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for test, name in (
        ("is_loopback", "loopback"),
        ("is_unspecified", "unspecified"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_private", "private"),
        ("is_reserved", "reserved"),
    ):
        if getattr(ip, test):
            return f"a {name} address"
    if ip.version == 4 and ip in SHARED_ADDRESS_SPACE:
        return "a shared (carrier-grade NAT) address"
    if not ip.is_global:
        return "not a public address"
    return None


def literal_ip(host: str) -> IPAddress | None:
    """The address a host written as a number stands for, in any form a resolver accepts."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if _LEGACY_IPV4.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _check_ip(host: str, ip: IPAddress, port: int, allow: AllowList) -> None:
    reason = refused_reason(ip)
    if reason and not allow.allows_ip(ip, port):
        shown = host if str(ip) == host.strip("[]") else f"{host} ({ip})"
        ports = allow.ports_for(host, ip)
        if ports:
            raise OutboundRefused(
                f"{shown} is {reason}; OUTBOUND_ALLOWED_HOSTS allows it on port {', '.join(map(str, ports))} "
                f"only, not on port {port}."
            )
        raise OutboundRefused(
            f"{shown} is {reason}; outbound requests to it are refused "
            f"unless the operator allows it in OUTBOUND_ALLOWED_HOSTS."
        )


def resolve(host: str, port: int | None = None) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos))


def check_url(url: str, *, allowed: Iterable[str] | None = None, resolve_names: bool = True) -> None:
    """Raise :class:`OutboundRefused` (saying why) if the server must not call ``url``.

    A name that does not resolve now passes: it is checked again, address by address, on connect.
    """
    allow = AllowList.parse(allowed_entries() if allowed is None else allowed)
    try:
        parts = urlsplit(url)
        port = parts.port or default_port(parts.scheme)
    except ValueError as exc:
        raise OutboundRefused(f"Not a valid URL ({exc}).") from None
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused("Must be an http or https URL.")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OutboundRefused("The URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused("The URL must not carry a user name or password.")
    if allow.allows_name(host, port):
        return
    if host in METADATA_NAMES:
        raise OutboundRefused(f"{host} is a cloud metadata service; outbound requests to it are refused.")
    ip = literal_ip(host)
    if ip is not None:
        _check_ip(host, ip, port, allow)
        return
    if not resolve_names:
        return
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return
    for ip in addresses:
        _check_ip(host, ip, port, allow)


def _connect_checked(inner, allow: AllowList, host, port, timeout, local_address, socket_options):
    """Resolve, check, and connect to the checked address: what is connected to is what was checked."""
    if allow.allows_name(host, port):
        return inner.connect_tcp(host, port, timeout, local_address, socket_options)
    if host in METADATA_NAMES:
        raise OutboundRefused(f"{host} is a cloud metadata service; outbound requests to it are refused.")
    ip = literal_ip(host)
    addresses = [ip] if ip is not None else resolve(host, port)
    refusal = None
    for address in addresses:
        try:
            _check_ip(host, address, port, allow)
        except OutboundRefused as exc:
            refusal = refusal or exc
            continue
        return inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
    raise refusal or OutboundRefused(f"{host} did not resolve to any address.")


# The SDKs do not share one HTTP library: openai and groq take an httpx client, anthropic 2.x an
# httpx2 one (a fork with the same API). The same guard is built on each.
_LIBRARIES = {"httpx": (httpx, httpcore), "httpx2": (httpx2, httpcore2)}


@cache
def _client_class(library: str):
    http, core = _LIBRARIES[library]

    class GuardedBackend(core.NetworkBackend):
        def __init__(self, allow: AllowList):
            self._inner = core.SyncBackend()
            self._allow = allow

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            return _connect_checked(self._inner, self._allow, host, port, timeout, local_address, socket_options)

        def connect_unix_socket(self, path, timeout=None, socket_options=None):
            raise OutboundRefused("Unix sockets are not an outbound destination.")

        def sleep(self, seconds):
            self._inner.sleep(seconds)

    default_limits = http.Limits(max_connections=100, max_keepalive_connections=20)

    class GuardedTransport(http.HTTPTransport):
        def __init__(self, *, allow: AllowList, limits=default_limits):
            super().__init__(trust_env=False, limits=limits)
            # The pool httpx builds, with the checking network backend under it.
            self._pool = core.ConnectionPool(
                ssl_context=http.create_ssl_context(trust_env=False),
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=GuardedBackend(allow),
            )

    class GuardedClient(http.Client):
        """Never follows a redirect, whatever the caller (an SDK) asks for: a 3xx is the answer."""

        def send(self, request, *, stream=False, auth=http.USE_CLIENT_DEFAULT, follow_redirects=None):
            return super().send(request, stream=stream, auth=auth, follow_redirects=False)

    return GuardedClient, GuardedTransport


def guarded_client(*, timeout: float | None = None, allowed: Iterable[str] | None = None, library: str = "httpx"):
    """A client for tenant-controlled URLs, to pass to an SDK as ``http_client=``.

    ``library`` is the HTTP library the SDK expects: ``httpx`` (openai, groq) or ``httpx2`` (anthropic).
    """
    client_class, transport_class = _client_class(library)
    allow = AllowList.parse(allowed_entries() if allowed is None else allowed)
    return client_class(
        transport=transport_class(allow=allow), timeout=timeout, follow_redirects=False, trust_env=False
    )
