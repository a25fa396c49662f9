"""A new client connection gets a deadline for its first request head, and a per-address cap.

mitmproxy ends a connection only after `tcp_timeout` (600 s) without a byte: a client that
sends one header byte every few seconds (slowloris) holds a connection forever, and 500 of them
stay open (issue 53). This addon starts a timer when a client connects and closes the
connection when no request head is complete by `groundhog_header_timeout`; a head completing
(`requestheaders`), a relayed raw tunnel (`tcp_start`) or the client leaving stops it. While a
connection waits for its first head it counts as half-open against its address; beyond
`groundhog_max_half_open` a new connection from that address is closed at once.

A kept-alive connection between requests is idle, not half-open: mitmproxy's `tcp_timeout`
bounds it, as before. Each later head (and every head inside a CONNECT tunnel) is timed by the
HTTP/1 layer itself from its first byte (proxy/http1_limits.py): same option, answered `408`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from mitmproxy import connection, ctx, http, tcp

from proxy.fail_closed import fail_closed_hooks
from proxy.options import seconds

log = logging.getLogger(__name__)


@fail_closed_hooks
class HeaderDeadline:
    def __init__(self) -> None:
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._half_open: defaultdict[str, set[str]] = defaultdict(set)

    def client_connected(self, client: connection.Client) -> None:
        address = str(client.peername[0]) if client.peername else ""
        waiting = self._half_open[address]
        limit = ctx.options.groundhog_max_half_open
        if len(waiting) >= limit:
            log.warning(
                "closed a connection from %s: %d connections from it have sent no request head "
                "yet (groundhog_max_half_open)",
                address,
                len(waiting),
            )
            client.error = "too many half-open connections from this address"
            return
        waiting.add(client.id)
        timeout = seconds(ctx.options, "groundhog_header_timeout")
        loop = asyncio.get_running_loop()
        self._timers[client.id] = loop.call_later(timeout, self._expire, client, timeout)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        self._settle(flow.client_conn)

    def tcp_start(self, flow: tcp.TCPFlow) -> None:
        self._settle(flow.client_conn)

    def client_disconnected(self, client: connection.Client) -> None:
        self._settle(client)

    def half_open(self, address: str) -> int:
        return len(self._half_open.get(address, ()))

    def _settle(self, client: connection.Client) -> None:
        timer = self._timers.pop(client.id, None)
        if timer is None:
            return
        timer.cancel()
        address = str(client.peername[0]) if client.peername else ""
        waiting = self._half_open.get(address)
        if waiting is not None:
            waiting.discard(client.id)
            if not waiting:
                del self._half_open[address]

    def _expire(self, client: connection.Client, timeout: float) -> None:
        self._settle(client)
        server = ctx.master.addons.get("proxyserver")
        handler = server.connections.get(client.id) if server is not None else None
        transport = handler.transports.get(client) if handler is not None else None
        if transport is None or transport.handler is None:
            return
        log.warning(
            "closed a connection from %s: no request head within %g s (groundhog_header_timeout)",
            client.peername,
            timeout,
        )
        transport.handler.cancel("no request head in time")
