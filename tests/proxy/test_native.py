"""proxy/native.py: every HTTP layer mitmproxy builds becomes Groundhog's, nothing else does.

The adapted streams' behaviour (the upstream-failed problem in place of mitmproxy's HTML 502,
the deadline) is exercised through the real proxy in test_streams.py and test_end_to_end.py;
this pins the seams of mitmproxy it relies on, so an upgrade that moves them fails here.
"""

from __future__ import annotations

import inspect
import time

from mitmproxy.connection import ConnectionState, Server
from mitmproxy.proxy.context import Context
from mitmproxy.proxy.layers import ClientTLSLayer, HttpLayer, TCPLayer, modes
from mitmproxy.proxy.layers.http import GetHttpConnection, HTTPMode, HttpStream
from mitmproxy.test import taddons, tflow

from proxy.native import (
    GroundhogHttpLayer,
    GroundhogHttpStream,
    adapt,
    heard_from,
    stale_connections,
)


def test_http_layers_in_a_decision_are_reclassed_and_others_left_alone() -> None:
    with taddons.context() as tctx:
        context = Context(tflow.tclient_conn(), tctx.options)
        root = modes.HttpProxy(context)
        tls = ClientTLSLayer(context)
        http = HttpLayer(context, HTTPMode.regular)
        root.child_layer, tls.child_layer = tls, http
        assert adapt(root) is root
        assert type(http) is GroundhogHttpLayer and http.mode is HTTPMode.regular
        tcp = TCPLayer(context)
        assert adapt(tcp) is tcp and type(tcp) is TCPLayer
        assert adapt(None) is None


def _server(
    address: tuple[str, int],
    set_up: float,
    alpn: bytes | None = None,
    state: ConnectionState = ConnectionState.OPEN,
) -> Server:
    server = Server(address=address, timestamp_tcp_setup=set_up, alpn=alpn)
    server.state = state  # last: mitmproxy refuses changes to an open connection
    return server


def test_only_quiet_open_http1_connections_of_the_asked_address_are_stale() -> None:
    now = time.time()
    world, other = ("127.0.0.1", 8000), ("127.0.0.1", 9000)
    fresh, quiet = _server(world, now), _server(world, now - 10)
    quiet_h2 = _server(world, now - 10, b"h2")
    quiet_elsewhere = _server(other, now - 10)
    quiet_closed = _server(world, now - 10, None, ConnectionState.CLOSED)
    with taddons.context() as tctx:
        http = HttpLayer(Context(tflow.tclient_conn(), tctx.options), HTTPMode.regular)
        adapt(http)
        for server in (fresh, quiet, quiet_h2, quiet_elsewhere, quiet_closed):
            http.connections[server] = http
        asked = GetHttpConnection(world, False, None)
        assert stale_connections(http, asked, now - 1) == [quiet]
        heard_from(http, quiet)  # bytes just came in on it (an answer): not quiet any more
        assert stale_connections(http, asked, now - 1) == []
        assert stale_connections(http, asked, time.time() + 1) == [fresh, quiet]


def test_the_mitmproxy_seams_relied_on_are_still_there() -> None:
    for name in ("handle_protocol_error", "check_killed", "make_server_connection"):
        assert name in vars(HttpStream), f"mitmproxy's HttpStream has no {name} any more"
        assert name in vars(GroundhogHttpStream)
    assert list(inspect.signature(HttpLayer.make_stream).parameters) == ["self", "stream_id"]
    assert list(inspect.signature(HttpLayer.get_connection).parameters) == [
        "self", "event", "reuse"
    ]  # fmt: skip
    assert "connection_spec_matches" in vars(GetHttpConnection)
    states = {"state_wait_for_response_headers", "state_consume_response_body", "state_errored"}
    assert states <= set(vars(HttpStream))
