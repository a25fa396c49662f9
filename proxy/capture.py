"""The sidecar's half of capture: who a redirected connection is, and its DNS.

A captured worker (`groundhog run --capture`, or a pod whose init container redirects its
traffic) reaches the proxy's transparent listener without naming anything: its identity is the
address it comes from, looked up in the capture registry (groundhog/capture_registry.py) when
the connection arrives, or the proxy's own --tape/--branch when the address is not registered
(one worker per pod). A request from a registered address that names another tape or branch in
headers or credentials is refused, never filed elsewhere. On start-up the sidecar announces its
transparent and DNS listeners in the registry so `run --capture` knows where to redirect.

DNS from a captured namespace is answered here and never goes live. A name gets a stand-in
address from 198.18.0.0/15 (reserved, routed nowhere), the same for every worker of this
sidecar; the worker's connection to it reaches the transparent listener like any other, and
the proxy dials the *name* (as it does for a proxied request) only when the resolver says to
forward. So a DNS answer holds no world at all: nothing to record, nothing that can differ
between branches, nothing looked up on a sealed tape. IP literals and `localhost` are
answered as themselves; other record types are refused, and a stand-in address the sidecar
did not hand out (a worker's stale cache across a sidecar restart) is never dialled.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from mitmproxy import connection, ctx, dns, http
from mitmproxy.addonmanager import Loader
from mitmproxy.proxy import mode_specs, server_hooks

from groundhog.capture_registry import CapturedWorker, SidecarListeners, announce, lookup
from groundhog.protocol.headers import BRANCH as HEADER_BRANCH
from groundhog.protocol.headers import TAPE as HEADER_TAPE
from proxy.fail_closed import fail_closed_hooks
from proxy.identity import CredentialsError, Identity, credentials_from_request

log = logging.getLogger(__name__)

LOCALHOST_NAMES = frozenset({"localhost", "localhost.localdomain"})
STAND_IN_RANGE = ipaddress.IPv4Network("198.18.0.0/15")


class StandIns:
    """Names and the stand-in addresses handed out for them, both ways.

    An address is the name's hash in the range, probed past collisions, so it is the same
    after a restart unless two names collide."""

    def __init__(self, network: ipaddress.IPv4Network = STAND_IN_RANGE) -> None:
        self.network = network
        self._by_name: dict[str, ipaddress.IPv4Address] = {}
        self._by_address: dict[ipaddress.IPv4Address, str] = {}

    def address_for(self, name: str) -> ipaddress.IPv4Address:
        name = name.rstrip(".").lower()
        known = self._by_name.get(name)
        if known is not None:
            return known
        size = self.network.num_addresses
        start = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
        for step in range(size):
            candidate = self.network.network_address + (start + step) % size
            if candidate not in self._by_address:
                self._by_name[name], self._by_address[candidate] = candidate, name
                return candidate
        raise OverflowError(f"no stand-in address left in {self.network}")

    def is_stand_in(self, host: str) -> bool:
        try:
            return ipaddress.ip_address(host) in self.network
        except ValueError:
            return False

    def name_for(self, host: str) -> str | None:
        if not self._by_address:  # the common case, on every request's path: no parsing
            return None
        try:
            return self._by_address.get(ipaddress.IPv4Address(host))
        except ValueError:
            return None


@dataclass(frozen=True)
class Mismatch:
    """What a captured request named instead of its worker's identity."""

    named: str
    worker: CapturedWorker


def is_captured(client: connection.Client) -> bool:
    return isinstance(client.proxy_mode, mode_specs.TransparentMode)


def named_other_identity(request: http.Request, worker: CapturedWorker) -> Mismatch | None:
    """A tape or branch the request names (headers or credentials) that is not its worker's."""
    try:
        credentials = credentials_from_request(request)
    except CredentialsError:
        credentials = None
    named = [
        ("tape", request.headers.get(HEADER_TAPE), worker.tape),
        ("branch", request.headers.get(HEADER_BRANCH), worker.branch),
        ("tape", credentials.tape if credentials else None, worker.tape),
        ("branch", credentials.branch if credentials else None, worker.branch),
    ]
    for part, value, own in named:
        if value and value != own:
            return Mismatch(f"{part} {value!r}", worker)
    return None


def _announced_host(host: str) -> str:
    """The address a DNAT rule can point at: an unspecified listen address is loopback."""
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


@fail_closed_hooks
class Capture:
    """Registry lookups per client connection, the sidecar announcement and the DNS answers."""

    def __init__(self) -> None:
        self._workers: dict[str, CapturedWorker | None] = {}
        self.stand_ins = StandIns()

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "groundhog_capture_dir",
            str,
            "",
            "Directory shared with `groundhog run --capture`: the sidecar announces its "
            "transparent and DNS listeners there and reads each captured worker's identity.",
        )

    def _directory(self) -> Path | None:
        value = ctx.options.groundhog_capture_dir
        return Path(value) if value else None

    async def running(self) -> None:
        directory = self._directory()
        server = ctx.master.addons.get("proxyserver")
        if directory is None or server is None:
            return
        found: dict[str, tuple[str, int]] = {}
        for instance in server.servers:
            if instance.mode.type_name in ("transparent", "dns") and instance.listen_addrs:
                host, port = instance.listen_addrs[0][:2]
                found.setdefault(instance.mode.type_name, (_announced_host(str(host)), int(port)))
        if "transparent" not in found:
            log.error("--capture-dir %s given but no transparent listener runs", directory)
            return
        listeners = SidecarListeners(os.getpid(), found["transparent"], found.get("dns"))
        announce(directory, listeners)
        log.info("capture: transparent %s, dns %s, registry %s", *found.values(), directory)

    def client_connected(self, client: connection.Client) -> None:
        directory = self._directory()
        if directory is None or not is_captured(client) or not client.peername:
            return
        # One small local file per connection, read once here rather than per request.
        self._workers[client.id] = lookup(directory, str(client.peername[0]))

    def client_disconnected(self, client: connection.Client) -> None:
        self._workers.pop(client.id, None)

    def worker_of(self, client: connection.Client) -> CapturedWorker | None:
        return self._workers.get(client.id)

    def identity_of(self, client: connection.Client) -> Identity | None:
        worker = self.worker_of(client)
        return Identity(tape=worker.tape, branch=worker.branch) if worker else None

    def dns_request(self, flow: dns.DNSFlow) -> None:
        if flow.response is not None or not isinstance(
            flow.client_conn.proxy_mode, mode_specs.DnsMode
        ):
            return
        flow.response = answer_locally(flow.request, self.stand_ins)

    def name_behind_stand_in(self, data: server_hooks.ServerConnectionHookData) -> None:
        """Dial the name behind a stand-in address; never the stand-in itself.

        Not a hook of its own: the Groundhog addon calls it first in its `server_connect`, so
        that `--map-host` applies to the name, whichever order mitmproxy runs hooks in."""
        address = data.server.address
        if not address or not self.stand_ins.is_stand_in(str(address[0])):
            return
        name = self.stand_ins.name_for(str(address[0]))
        if name is None:
            data.server.error = (
                f"{address[0]} is a stand-in address this proxy never handed out (a DNS answer "
                "cached across a proxy restart?): resolve the name again"
            )
            return
        data.server.address = (name, address[1])


def answer_locally(request: dns.DNSMessage, stand_ins: StandIns) -> dns.DNSMessage:
    """A stand-in address for a name, the address itself for a literal or localhost; any
    other question is refused."""
    question = request.question
    if question is None or question.class_ != dns.classes.IN:
        return request.fail(dns.response_codes.REFUSED)
    if question.type not in (dns.types.A, dns.types.AAAA):
        log.warning("captured DNS question %s refused: only A and AAAA are answered", question)
        return request.fail(dns.response_codes.REFUSED)
    name = question.name.rstrip(".").lower()
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    if name in LOCALHOST_NAMES:
        address = ipaddress.IPv4Address("127.0.0.1")
    else:
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            address = stand_ins.address_for(name)
    if question.type == dns.types.A and isinstance(address, ipaddress.IPv4Address):
        return request.succeed([dns.ResourceRecord.A(question.name, address)])
    return request.succeed([])  # no IPv6 inside a capture namespace
