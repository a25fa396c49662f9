"""`--map-host HOST=ADDR:PORT`: send a host's connections elsewhere, as curl's `--resolve`.

A test runs the catalog's real host names (`api.tavily.com`) against a local stand-in, and a
user points a recorded host at staging, without touching DNS or the worker. Only where the
proxy connects changes: the request's Host header, its TLS server name (SNI, and so the
certificate checked) and its request key stay on the original name, so what is recorded is
the same as from the real host. The self guard (proxy/self_guard.py) judges the mapped address
too: a map cannot make the proxy forward to Groundhog itself.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping

from proxy.errors import ProxyError

Target = tuple[str, int]


class HostMapError(ProxyError, ValueError):
    """A `--map-host` entry that is not HOST=ADDR:PORT."""


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise HostMapError(
            f"--map-host {entry!r}: {text!r} is not a port (1-65535); "
            "give HOST=ADDR:PORT, e.g. api.tavily.com=127.0.0.1:9000"
        )
    return int(text)


def parse_entry(entry: str) -> tuple[str, Target]:
    """`api.example.com=127.0.0.1:9000` (or `=[::1]:9000`) -> (host, (address, port))."""
    host, equals, target = entry.strip().partition("=")
    host = host.strip().rstrip(".").lower()
    if not equals or not host or not target.strip():
        raise HostMapError(
            f"--map-host {entry!r} is not HOST=ADDR:PORT (e.g. api.tavily.com=127.0.0.1:9000)"
        )
    if "/" in host or (":" in host and not _is_ip(host)):
        raise HostMapError(f"--map-host {entry!r}: {host!r} is not a host name (no port or path)")
    address, colon, port = target.strip().rpartition(":")
    if not colon or not address:
        raise HostMapError(
            f"--map-host {entry!r} names no port: give HOST=ADDR:PORT "
            "(e.g. api.tavily.com=127.0.0.1:9000)"
        )
    return host.strip("[]"), (address.strip("[]"), _port(port, entry))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def parse_host_map(entries: Iterable[str]) -> dict[str, Target]:
    """Every entry parsed; a host named twice is refused (which one wins would be a guess)."""
    table: dict[str, Target] = {}
    for entry in entries:
        host, target = parse_entry(entry)
        if host in table and table[host] != target:
            raise HostMapError(f"--map-host names {host} twice ({table[host]} and {target})")
        table[host] = target
    return table


def mapped(table: Mapping[str, Target], host: str, port: int) -> Target:
    """Where a connection to `host:port` really goes (itself unless the map names the host)."""
    if not table:
        return host, port
    return table.get(host.rstrip(".").lower(), (host, port))
