"""A narrow adaptation of mitmproxy's HTTP layer: Groundhog answers failed live calls itself.

Recorded traffic goes upstream through mitmproxy's own forwarding (HTTP/2, upstream-proxy
mode, its TLS trust options and header limits, streaming). One thing that path cannot do for
an addon: when the live call fails before the world answered (connection refused, TLS
failure, the server closing early, our deadline), mitmproxy's `HttpStream.handle_protocol_error`
runs the `error` hook and then sends the client its own `text/html` 502
(`_http1.make_error_response`, or the HTTP/2 equivalent); an addon cannot replace it, and
`flow.kill()` does not reach a flow in transit (mitmproxy issue 4711). A worker must instead
get the resolver's `upstream-failed` problem+json with the decision headers, never an HTML
page that looks like the world's answer.

So the addon's `next_layer` hook re-classes each `HttpLayer` mitmproxy builds as
`GroundhogHttpLayer`, whose streams are `GroundhogHttpStream`. That subclass changes exactly
two things, and only for flows whose addon state put a response in
`flow.metadata[FAILURE_RESPONSE]` during the `error` hook:

- the 502 that `handle_protocol_error` would send is replaced by that response (sent as a
  normal response, then the client connection is closed as mitmproxy would have);
- an injected `UpstreamDeadline` (the addon's deadline timer) cancels the upstream request and
  runs the same failure path, so a fetch past its deadline ends as `upstream-failed`.

HTTP/1 client connections are `GroundhogHttp1Server` (proxy/http1_limits.py: bounded request
heads, and a problem instead of mitmproxy's HTML error page), HTTP/2 ones `GroundhogHttp2Server`
(proxy/http2_refusals.py: the same problem instead of the page). And one thing for every flow:
an HTTP/1 upstream connection that has been quiet longer than
`groundhog_upstream_idle` is closed instead of reused (`GroundhogHttpLayer.get_connection`).
A worker that keeps its connection to the proxy keeps the proxy's connection to the world; while
the tape serves its reads that upstream connection sits idle, and the world's keep-alive (5 s
for uvicorn and Node, 2 s for gunicorn) closes it. mitmproxy reuses any connection it has not yet
seen closed, so a write sent as the close arrives met it: `upstream-failed`, and the worker lost
the write's answer (found by a benchmark run, 2026-12-06).

Everything else is mitmproxy's code, unchanged. Written against mitmproxy 12; the tests in
tests/proxy/test_native.py fail if a mitmproxy upgrade changes these internals.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from mitmproxy import http
from mitmproxy.connection import Server
from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.layers.http import (
    ErrorCode,
    GetHttpConnection,
    HttpLayer,
    HttpStream,
    RequestProtocolError,
    ResponseData,
    ResponseEndOfMessage,
    ResponseHeaders,
    ResponseProtocolError,
    SendHttp,
    is_h3_alpn,
)

from proxy.http1_limits import GroundhogHttp1Server
from proxy.http2_refusals import GroundhogHttp2Server
from proxy.options import SECONDS_OPTIONS, seconds
from proxy.websocket_played import PLAYING, PlayedWebsocketLayer

IDLE_OPTION = "groundhog_upstream_idle"
# flow.metadata keys shared with the addon.
FAILURE_RESPONSE = "groundhog.failure_response"  # the response that replaces mitmproxy's 502
FAILURE_PHASE = "groundhog.failure_phase"  # "connect" (no connection) or "exchange"


@dataclass
class UpstreamDeadline(events.MessageInjected[str]):
    """The addon's timer says this flow's live call ran out of time (`message`: why)."""


class GroundhogHttpStream(HttpStream):
    _upstream_open = False

    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, UpstreamDeadline):
            yield from self._deadline(event)
        else:
            yield from super()._handle_event(event)

    def flow_done(self) -> layer.CommandGenerator[None]:
        played = self.flow.websocket is not None and PLAYING in self.flow.metadata
        if not played or self.flow.response is None or self.flow.response.status_code != 101:
            yield from super().flow_done()
            return
        # A conversation served from the tape: mitmproxy's own upgrade, with a layer that
        # never writes to the server connection there is none of (proxy/websocket_played.py).
        self.child_layer = PlayedWebsocketLayer(self.context, self.flow)
        self._handle_event = self.passthrough  # type: ignore[method-assign]
        yield from self.child_layer.handle_event(events.Start())
        yield SendHttp(ResponseEndOfMessage(self.stream_id), self.context.client)

    def make_server_connection(self) -> layer.CommandGenerator[bool]:
        opened = yield from super().make_server_connection()
        self._upstream_open = bool(opened)
        return opened

    def _waiting_for_the_world(self) -> bool:
        return (
            self.server_state
            in (
                self.state_wait_for_response_headers,
                self.state_consume_response_body,
            )
            and self.client_state != self.state_errored
        )

    def _deadline(self, event: UpstreamDeadline) -> layer.CommandGenerator[None]:
        if not self._waiting_for_the_world():
            return  # answered, streaming or already failed: the addon handles the rest
        yield from self._cancel_upstream(event.message)
        yield from self.handle_protocol_error(
            ResponseProtocolError(self.stream_id, event.message, ErrorCode.GENERIC_SERVER_ERROR)
        )

    def handle_protocol_error(
        self, event: RequestProtocolError | ResponseProtocolError
    ) -> layer.CommandGenerator[None]:
        if not (isinstance(event, ResponseProtocolError) and self._waiting_for_the_world()):
            return (yield from super().handle_protocol_error(event))
        self.flow.metadata[FAILURE_PHASE] = (
            "connect" if event.code is ErrorCode.CONNECT_FAILED else "exchange"
        )
        self._upstream_open = False  # the world's side failed: there is nothing to cancel
        return (yield from self._replace_error_page(super().handle_protocol_error(event)))

    def check_killed(self, emit_error_hook: bool) -> layer.CommandGenerator[bool]:
        if not self._waiting_for_the_world():
            return (yield from super().check_killed(emit_error_hook))
        # The addon may kill a flow that has not answered yet, naming the answer to give.
        return (yield from self._replace_error_page(super().check_killed(emit_error_hook)))

    def _replace_error_page(
        self, original: Generator[commands.Command, Any, Any]
    ) -> Generator[commands.Command, Any, Any]:
        """Run mitmproxy's handler, swapping its error page for the addon's response."""
        try:
            command = next(original)
            while True:
                replacement = self.flow.metadata.get(FAILURE_RESPONSE)
                if (
                    isinstance(command, SendHttp)
                    and command.connection is self.context.client
                    and isinstance(command.event, ResponseProtocolError)
                    and isinstance(replacement, http.Response)
                ):
                    # Killed while the world is still answering: stop reading its answer.
                    yield from self._cancel_upstream("killed")
                    self.flow.response = replacement
                    yield from self._send_whole(replacement)
                    command = next(original)
                    continue
                result = yield command
                command = original.send(result)
        except StopIteration as stop:
            return stop.value

    def _cancel_upstream(self, why: str) -> layer.CommandGenerator[None]:
        """HTTP/1 closes the upstream connection, HTTP/2 resets just this stream."""
        if self._upstream_open:
            self._upstream_open = False
            yield SendHttp(
                RequestProtocolError(self.stream_id, why, ErrorCode.CANCEL), self.context.server
            )

    def _send_whole(self, response: http.Response) -> layer.CommandGenerator[None]:
        content = response.raw_content or b""
        yield SendHttp(ResponseHeaders(self.stream_id, response, not content), self.context.client)
        if content:
            yield SendHttp(ResponseData(self.stream_id, content), self.context.client)
        yield SendHttp(ResponseEndOfMessage(self.stream_id), self.context.client)
        if self.context.client.alpn != b"h2":
            # As mitmproxy does after its own error page: this HTTP/1 connection is done.
            yield commands.CloseConnection(self.context.client)


class GroundhogHttpLayer(HttpLayer):
    """mitmproxy's HttpLayer, with streams that let the addon answer failed live calls, and
    no reuse of an upstream connection the world may be closing."""

    def get_connection(
        self, event: GetHttpConnection, *, reuse: bool = True
    ) -> layer.CommandGenerator[None]:
        if reuse:
            limit = upstream_idle(self.context.options)
            for connection in stale_connections(self, event, time.time() - limit):
                yield commands.CloseConnection(connection)  # state CLOSED: not reused below
        yield from super().get_connection(event, reuse=reuse)

    def make_stream(self, stream_id: int) -> layer.CommandGenerator[None]:
        self.streams[stream_id] = GroundhogHttpStream(self.context.fork(), stream_id)
        yield from self.event_to_child(self.streams[stream_id], events.Start())

    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        client = self.context.client
        http1 = client.alpn != b"h2" and not is_h3_alpn(client.alpn)
        if isinstance(event, events.Start) and client not in self.connections:
            # HttpLayer's Start keeps a connection set beforehand: HTTP/1 with bounded heads,
            # HTTP/2 whose own refusals carry a decision (proxy/http2_refusals.py).
            if http1:
                self.connections[client] = GroundhogHttp1Server(self.context.fork())
            elif client.alpn == b"h2":
                self.connections[client] = GroundhogHttp2Server(self.context.fork())
        if isinstance(event, events.DataReceived) and isinstance(event.connection, Server):
            heard_from(self, event.connection)
        if not isinstance(event, UpstreamDeadline):
            yield from super()._handle_event(event)
            return
        for stream in list(self.streams.values()):
            if getattr(stream, "flow", None) is event.flow:
                yield from self.event_to_child(stream, event)
                return
        # The flow may live inside a CONNECT tunnel: hand the event down each open tunnel
        # (a finished flow is found nowhere, and its late deadline is dropped).
        for stream in list(self.streams.values()):
            flow = getattr(stream, "flow", None)
            if flow is not None and flow.request.method == "CONNECT" and flow.response:
                yield from self.event_to_child(stream, event)


# When each connection of a layer last delivered bytes (time.time(), as mitmproxy's timestamps).
_HEARD = "_groundhog_heard"


def heard_from(http_layer: HttpLayer, connection: Server) -> None:
    # adapt() re-classes a built layer, so no __init__ of ours ever ran on it.
    heard: dict[Server, float] | None = http_layer.__dict__.get(_HEARD)
    if heard is None:
        heard = http_layer.__dict__[_HEARD] = {}
    heard[connection] = time.time()


def stale_connections(
    http_layer: HttpLayer, event: GetHttpConnection, quiet_before: float
) -> list[Server]:
    """The open HTTP/1 upstream connections `event` could reuse that last delivered bytes (or
    were set up) before `quiet_before`. An HTTP/1 connection mitmproxy offers for reuse carries
    no request (it has no pipelining), so closing it loses nothing; HTTP/2 ones may carry other
    streams and are left alone (an HTTP/2 server says goodbye with GOAWAY first)."""
    heard: dict[Server, float] = http_layer.__dict__.get(_HEARD, {})
    stale = []
    for connection in http_layer.connections:
        if (
            not isinstance(connection, Server)
            or not connection.connected
            or connection.alpn == b"h2"
            or connection in http_layer.waiting_for_establishment
            or not event.connection_spec_matches(connection)
        ):
            continue
        set_up = connection.timestamp_tls_setup or connection.timestamp_tcp_setup or quiet_before
        if max(heard.get(connection, 0.0), set_up) < quiet_before:
            stale.append(connection)
    for connection in list(heard):
        if connection not in http_layer.connections:
            del heard[connection]
    return stale


def upstream_idle(options: Any) -> float:
    """`groundhog_upstream_idle`, or its default where the option is not declared (a bare
    mitmproxy context in a test)."""
    if not hasattr(options, IDLE_OPTION):
        return SECONDS_OPTIONS[IDLE_OPTION][0]
    return seconds(options, IDLE_OPTION)


def adapt(chosen: layer.Layer | None) -> layer.Layer | None:
    """Re-class every plain HttpLayer in a `next_layer` decision (and its child chain)."""
    current = chosen
    while current is not None and not isinstance(current, layer.NextLayer):
        if type(current) is HttpLayer:
            # Same state, same __init__; only the stream factory and event routing differ.
            current.__class__ = GroundhogHttpLayer
        current = getattr(current, "child_layer", None)
    return chosen
