"""The proxy never forwards to Groundhog itself (DESIGN §4, issue 31).

A worker's only egress is the proxy, and the resolver's admin routes (`/unseal`, `DELETE` a
tape) answer whoever reaches them when no tokens are set, as with the default `make up`. If the
proxy forwarded `POST http://127.0.0.1:<resolver>/v1/tapes/victim/unseal`, a rollout could
unseal or delete any tape and record the admin answers onto its own. So requests (and CONNECT
tunnels) whose target is the resolver's address, the proxy's own listen address, an admin
address the deployment names (`groundhog_admin_addresses`), or a name that resolves to one of
them are refused before anything is asked or forwarded, whatever the tape's mode.

Only Groundhog's own ports are guarded, not loopback in general: a world on 127.0.0.1 at any
other port is a world like any other. A guarded address that is loopback or unspecified
(`0.0.0.0`) is reachable at every local address, so that port is guarded on all of them.
Names are resolved (off the event loop's thread) only when their port is a guarded one, so the
hot path of ordinary requests pays one set lookup.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from proxy.errors import ProxyError

log = logging.getLogger(__name__)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class AdminAddressError(ProxyError, ValueError):
    """A `groundhog_admin_addresses` entry that is neither PORT nor HOST:PORT."""


def _ip(text: str) -> IpAddress | None:
    try:
        address = ipaddress.ip_address(text.strip("[]").split("%")[0])
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def parse_admin_address(entry: str) -> tuple[str, int]:
    """`8070` (every local address), `host:8070` or `[::1]:8070` -> (host, port)."""
    text = entry.strip()
    host, _, port = text.rpartition(":") if ":" in text else ("", "", text)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise AdminAddressError(
            f"groundhog_admin_addresses entry {entry!r} is not PORT or HOST:PORT "
            "(e.g. 8070, 127.0.0.1:9000, [::1]:9000)"
        )
    return host.strip("[]") or "0.0.0.0", int(port)


@dataclass(frozen=True)
class Guarded:
    """One of Groundhog's own endpoints: what it is, where it listens."""

    what: str
    host: str
    port: int


@dataclass
class SelfGuard:
    """Decides whether a target is one of Groundhog's own endpoints."""

    endpoints: list[Guarded] = field(default_factory=list)
    local_addresses: frozenset[IpAddress] = frozenset()
    # port -> (what, the addresses it answers at; None: every local address)
    _by_port: dict[int, list[tuple[str, frozenset[IpAddress] | None, frozenset[str]]]] = field(
        default_factory=dict
    )

    @classmethod
    def build(
        cls,
        *,
        resolver_url: str,
        listen: Iterable[tuple[str, int]],
        admin_addresses: Sequence[str],
        resolve_name: bool = True,
    ) -> SelfGuard:
        """The guard for a proxy; `resolve_name` looks names up once, at configuration."""
        endpoints = []
        parts = urlsplit(resolver_url)
        if parts.hostname:
            default = 443 if parts.scheme == "https" else 80
            endpoints.append(Guarded("the resolver", parts.hostname, parts.port or default))
        endpoints += [Guarded("this proxy's listen address", h or "0.0.0.0", p) for h, p in listen]
        for entry in admin_addresses:
            host, port = parse_admin_address(entry)
            endpoints.append(Guarded(f"an admin address ({entry.strip()})", host, port))
        guard = cls(
            endpoints=endpoints, local_addresses=_local_addresses() if resolve_name else frozenset()
        )
        for endpoint in endpoints:
            address = _ip(endpoint.host)
            names = frozenset({endpoint.host.lower()})
            if address is not None:
                local = address.is_loopback or address.is_unspecified
                at = None if local else frozenset({address})
            elif endpoint.host.lower() in LOCAL_NAMES:
                at = None
            else:
                at = _lookup(endpoint.host) if resolve_name else frozenset()
                if at & guard.local_addresses or any(a.is_loopback for a in at):
                    at = None
            guard._by_port.setdefault(endpoint.port, []).append((endpoint.what, at, names))
        return guard

    @property
    def ports(self) -> frozenset[int]:
        return frozenset(self._by_port)

    def _match(self, port: int, host: str, addresses: Iterable[IpAddress]) -> str | None:
        found = list(addresses)
        for what, at, names in self._by_port.get(port, ()):
            if host.lower() in names:
                return what
            for address in found:
                if at is None:
                    if address.is_loopback or address.is_unspecified:
                        return what
                    if address in self.local_addresses:
                        return what
                elif address in at:
                    return what
        return None

    async def refusal(self, host: str, port: int) -> str | None:
        """Why a request to `host:port` is refused, or None (the common case: one lookup)."""
        if port not in self._by_port:
            return None
        name = host.strip().rstrip(".").lower()
        literal = _ip(name)
        if literal is not None:
            addresses: frozenset[IpAddress] = frozenset({literal})
        elif name in LOCAL_NAMES:
            addresses = frozenset({ipaddress.ip_address("127.0.0.1")})
        else:
            addresses = await _lookup_async(name, port)
        what = self._match(port, name, addresses)
        if what is None:
            return None
        via = "" if literal is not None else f" ({name} resolves to it)"
        return (
            f"{host}:{port} is {what}{via}: the proxy never forwards to Groundhog itself, so a "
            "worker cannot reach the resolver's admin routes through it; call them from outside "
            "the worker's egress (or list the world on another port)"
        )


def _addresses(infos: Iterable[tuple[object, ...]]) -> frozenset[IpAddress]:
    found = set()
    for info in infos:
        sockaddr = info[4]
        assert isinstance(sockaddr, tuple)
        address = _ip(str(sockaddr[0]))
        if address is not None:
            found.add(address)
    return frozenset(found)


def _lookup(host: str) -> frozenset[IpAddress]:
    try:
        return _addresses(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM))
    except OSError:
        log.warning("cannot resolve %s; it is guarded by name only", host)
        return frozenset()


async def _lookup_async(host: str, port: int) -> frozenset[IpAddress]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return frozenset()  # mitmproxy's own connect fails the same way
    return _addresses(infos)


def _local_addresses() -> frozenset[IpAddress]:
    """This host's own addresses: a service bound to 0.0.0.0 answers at each of them."""
    return _lookup(socket.gethostname())
