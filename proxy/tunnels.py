"""Close CONNECT tunnels whose bytes are neither HTTP nor TLS, unless the resolver allows them.

After `CONNECT host:port` mitmproxy answers 200 and looks at the first bytes; when they are
neither HTTP nor TLS (or the port is DNS's) it falls back to relaying them raw — a live call the
resolver never decided, on a sealed tape, with no tape named, or with the resolver down. This
addon runs after mitmproxy's `NextLayer`: whenever the chosen layer is not one Groundhog can see
into (HTTP, TLS, the proxy mode itself), it asks the resolver (`POST /v1/tunnel`) for that
tunnel's tape, branch and host, and replaces the layer with one that closes the connection
unless the answer is `passthrough`. Any doubt — no tape named, resolver unreachable, an error
in this hook — closes the tunnel; nothing is relayed without an explicit yes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mitmproxy import connection, ctx, http
from mitmproxy.addonmanager import Loader
from mitmproxy.proxy import layer, layers
from mitmproxy.proxy.context import Context

from groundhog.protocol.decisions import Decision
from proxy.capabilities import pin_mismatch
from proxy.capture import Capture
from proxy.fail_closed import ClosedTunnel, fail_closed_hooks
from proxy.identity import Credentials, CredentialsError, connect_credentials
from proxy.options import seconds
from proxy.resolver_client import (
    ResolverClient,
    ResolverProtocolError,
    ResolverRejected,
    ResolverUnavailable,
)

log = logging.getLogger(__name__)

# Layers whose traffic the Groundhog addon sees as HTTP flows (and so decides per request).
VISIBLE_LAYERS: tuple[type[layer.Layer], ...] = (
    layers.HttpLayer,
    layers.ServerTLSLayer,
    layers.ClientTLSLayer,
    layers.modes.HttpProxy,
    layers.modes.HttpUpstreamProxy,
)


@dataclass(frozen=True)
class TunnelVerdict:
    decision: Decision
    reason: str


def needs_decision(chosen: layer.Layer | None) -> bool:
    """True when mitmproxy chose a layer that would relay bytes Groundhog cannot see."""
    return chosen is not None and not isinstance(chosen, VISIBLE_LAYERS)


def host_listed(host: str, listed: Sequence[str]) -> bool:
    return host.lower() in {name.strip().lower() for name in listed if name.strip()}


@fail_closed_hooks
class Tunnels:
    def __init__(self, capture: Capture | None = None) -> None:
        self.capture = capture
        self.resolver: ResolverClient | None = None
        self._identities: dict[str, Credentials] = {}
        self._retired: list[ResolverClient] = []

    def load(self, loader: Loader) -> None:
        loader.add_option(
            "groundhog_tcp_passthrough_hosts",
            Sequence[str],
            [],
            "Hosts whose raw (non-HTTP, non-TLS) tunnels may be relayed unrecorded while the "
            "tape is online; every other raw tunnel is closed.",
        )

    def configure(self, updated: set[str]) -> None:
        if self.resolver is None or updated & {
            "groundhog_resolver_url",
            "groundhog_proxy_token",
            "groundhog_record_timeout",
        }:
            if self.resolver is not None:
                self._retired.append(self.resolver)
            options = ctx.options
            self.resolver = ResolverClient(
                options.groundhog_resolver_url,
                token=options.groundhog_proxy_token,
                record_timeout=seconds(options, "groundhog_record_timeout"),
            )

    async def done(self) -> None:
        for client in [*self._retired, self.resolver]:
            if client is not None:
                await client.close()
        self._retired.clear()

    def http_connect(self, flow: http.HTTPFlow) -> None:
        try:
            credentials = connect_credentials(flow.request)
        except CredentialsError:
            return  # the Groundhog addon answers the CONNECT with a 400
        if credentials is not None:
            self._identities[flow.client_conn.id] = credentials

    def client_disconnected(self, client: connection.Client) -> None:
        self._identities.pop(client.id, None)

    async def next_layer(self, nextlayer: layer.NextLayer) -> None:
        if not needs_decision(nextlayer.layer):
            return
        context = nextlayer.context
        try:
            verdict = await self._decide(context)
        except Exception as error:  # fail closed: an error here must not mean "relay"
            log.exception("raw tunnel decision failed")
            verdict = TunnelVerdict(Decision.REFUSED, f"decision failed: {error}")
        target = _target(context)
        if verdict.decision is Decision.PASSTHROUGH:
            log.info("raw tunnel to %s relayed unrecorded: %s", target, verdict.reason)
            return
        log.warning("raw tunnel to %s closed, nothing relayed: %s", target, verdict.reason)
        chosen = nextlayer.layer
        if chosen is not None:
            with contextlib.suppress(ValueError):
                context.layers.remove(chosen)
        nextlayer.layer = ClosedTunnel(context)

    async def _decide(self, context: Context) -> TunnelVerdict:
        address = context.server.address
        if not address:
            return TunnelVerdict(Decision.REFUSED, "no destination")
        host, port = str(address[0]), int(address[1])
        if self.capture is not None:
            host = self.capture.stand_ins.name_for(host) or host
        options = ctx.options
        remembered = self._identities.get(context.client.id)
        worker = self.capture.worker_of(context.client) if self.capture else None
        if worker is not None:
            # A captured worker's namespace is its identity (proxy/capture.py).
            remembered = Credentials(
                tape=worker.tape, branch=worker.branch, capability=worker.capability
            )
        tape = (remembered.tape if remembered else None) or options.groundhog_tape
        branch = (remembered.branch if remembered else None) or options.groundhog_branch
        if not tape or not branch:
            return TunnelVerdict(Decision.REFUSED, "no tape and branch named")
        elsewhere = pin_mismatch(
            tape,
            branch,
            pinned_tape=options.groundhog_tape,
            pinned_branch=options.groundhog_branch,
        )
        if elsewhere is not None:
            return TunnelVerdict(Decision.REFUSED, f"the proxy is pinned: not {elsewhere}")
        assert self.resolver is not None
        payload = {
            "tape": tape,
            "branch": branch,
            "host": host,
            "port": port,
            "listed_by_proxy": host_listed(host, options.groundhog_tcp_passthrough_hosts),
        }
        capability = (remembered.capability if remembered else None) or (
            options.groundhog_capability
        )
        if capability:
            payload["capability"] = capability  # checked by the resolver
        try:
            answer = await self.resolver.tunnel(payload)
        except (ResolverUnavailable, ResolverRejected, ResolverProtocolError) as error:
            return TunnelVerdict(Decision.REFUSED, f"the resolver did not allow it: {error}")
        decision = answer.get("decision")
        detail = str(answer.get("detail") or "")
        if decision == Decision.PASSTHROUGH:
            return TunnelVerdict(Decision.PASSTHROUGH, detail)
        return TunnelVerdict(Decision.REFUSED, detail or f"resolver answered {decision!r}")


def _target(context: Context) -> str:
    address = context.server.address
    return f"{address[0]}:{address[1]}" if address else "(no destination)"
