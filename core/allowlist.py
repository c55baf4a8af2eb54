"""The operator's outbound allow-list entries (OUTBOUND_ALLOWED_HOSTS, its old name
JUDGE_BASE_URL_ALLOWED_HOSTS, WEBHOOK_ALLOWED_HOSTS): parsed once, at start (config/settings.py).

An entry is a host name, an IP address or a network (CIDR), optionally with a port:

    gateway.internal            gateway.internal:8443
    10.1.2.3                    10.1.2.3:8080
    10.0.0.0/8                  10.0.0.0/8:443
    [::1]  ::1                  [::1]:8080
    [fd00::/8]  fd00::/8        [fd00::/8]:443

Without a port every port is allowed (as before ports were read). An entry that does not parse is
an error naming it: a typo must not become an entry that silently matches nothing.

Pure (no Django, no HTTP library): the settings import it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_BRACKETED = re.compile(r"^\[([^\]]+)\](?::(.*))?$")


class BadEntry(ValueError):
    """An allow-list entry that is not a host, address or network with an optional port."""


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise BadEntry(f"{entry!r}: the port must be a number from 1 to 65535.")
    return int(text)


def _network(text: str) -> Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _host_name(text: str) -> bool:
    labels = text.rstrip(".").split(".")
    if len(text) > 253 or not all(_LABEL.match(label) for label in labels):
        return False
    return not labels[-1].isdigit()  # 300.1.1.1 or 10.1 are neither addresses nor names


def parse_entry(raw: str) -> tuple[str | Network, int | None]:
    """(a lowercase host name or a network, the port or None for any); BadEntry naming the entry."""
    entry = raw.strip().lower()
    bracketed = _BRACKETED.match(entry)
    if bracketed:  # IPv6, the only way to give one a port
        network = _network(bracketed.group(1))
        if network is None or network.version != 6:
            raise BadEntry(f"{raw.strip()!r}: brackets hold an IPv6 address or network, e.g. [::1]:8080.")
        port = bracketed.group(2)
        return network, (_port(port, raw.strip()) if port is not None else None)
    network = _network(entry)
    if network is not None:  # an address or network, IPv4 or (unbracketed, so portless) IPv6
        return network, None
    host, sep, port = entry.rpartition(":")
    if not sep:
        host, port = entry, None
    elif ":" in host:
        raise BadEntry(f"{raw.strip()!r}: an IPv6 address with a port is written in brackets, e.g. [::1]:8080.")
    target: str | Network | None = _network(host)
    if target is None:
        if not _host_name(host) or (port and not port.isdigit()):
            raise BadEntry(
                f"{raw.strip()!r} is not a host name, an IP address or a network (CIDR), with an optional :port."
            )
        target = host.rstrip(".")
    return target, _port(port, raw.strip()) if port is not None else None


@dataclass(frozen=True)
class AllowList:
    hosts: tuple[tuple[str, int | None], ...]
    networks: tuple[tuple[Network, int | None], ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        hosts, networks = [], []
        for entry in entries:
            if not entry.strip():
                continue
            target, port = parse_entry(entry)
            if isinstance(target, str):
                hosts.append((target, port))
            else:
                networks.append((target, port))
        return cls(tuple(hosts), tuple(networks))

    def allows_name(self, host: str, port: int | None) -> bool:
        host = host.lower().rstrip(".")
        return any(name == host and allowed in (None, port) for name, allowed in self.hosts)

    def allows_ip(self, ip: IPAddress, port: int | None) -> bool:
        return any(
            ip.version == net.version and ip in net and allowed in (None, port) for net, allowed in self.networks
        )

    def ports_for(self, host: str, ip: IPAddress | None) -> list[int]:
        """The ports entries allow for this host or address when none allows every port (for messages)."""
        host = host.lower().rstrip(".").strip("[]")
        ports = {port for name, port in self.hosts if name == host and port is not None}
        if ip is not None:
            ports |= {
                port for net, port in self.networks if port is not None and ip.version == net.version and ip in net
            }
        return sorted(ports)


def validated(setting: str, entries: Iterable[str]) -> list[str]:
    """The entries of a setting, each checked; ValueError naming the setting and the first bad entry."""
    entries = [e.strip() for e in entries if e.strip()]
    for entry in entries:
        try:
            parse_entry(entry)
        except BadEntry as exc:
            raise ValueError(f"{setting}: {exc}") from None
    return entries


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80
