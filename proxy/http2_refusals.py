"""The proxy's own refusals on an HTTP/2 stream carry a decision, as they do in HTTP/1.

When mitmproxy refuses a request itself — a `:scheme` it does not know (`CONNECT`, `ftp`), a
request its HTTP layer cannot route, a flow killed before any answer — its HTTP/2 server answers
the stream with its own `text/html` error page: `:status`, `server: mitmproxy`, and no
`x-groundhog-decision`, so a worker cannot tell the proxy's refusal from the world's answer (the
HTTP/2 boundary fuzzer found it: `:scheme: CONNECT` on a sealed tape, answered `400` that way).
proxy/http1_limits.py already writes these as `refused` problems for HTTP/1;
`GroundhogHttp2Server` is mitmproxy's HTTP/2 server with the same change, and
`GroundhogHttpLayer` (proxy/native.py) builds it for a client that speaks HTTP/2. Every other
event, and a refusal that must be a stream reset (headers already sent, no status to give), is
mitmproxy's own.
"""

from __future__ import annotations

from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.layers.http import ResponseProtocolError
from mitmproxy.proxy.layers.http._http2 import Http2Server

from proxy import problems


def refusal_fields(status: int, message: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """An HTTP/2 head (lowercase names, `:status` first) and body for a `refused` problem."""
    response = problems.problem_response(
        status,
        "proxy-refused",
        "The proxy refused the request",
        f"{message}; nothing more was forwarded",
    )
    head = [(b":status", b"%d" % status)]
    head += [(name.lower(), value) for name, value in response.headers.fields]
    return head, response.content or b""


class GroundhogHttp2Server(Http2Server):
    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, ResponseProtocolError) and self._answerable(event):
            status = event.code.http_status_code()
            assert status is not None  # _answerable checked it
            head, body = refusal_fields(status, event.message)
            self.h2_conn.send_headers(event.stream_id, head)
            self.h2_conn.send_data(event.stream_id, body, end_stream=True)
            yield commands.SendData(self.conn, self.h2_conn.data_to_send())
            return
        yield from super()._handle_event(event)

    def _answerable(self, event: ResponseProtocolError) -> bool:
        """mitmproxy's own condition for answering the stream with an error page."""
        if self.is_closed(event.stream_id) or not self.is_open_for_us(event.stream_id):
            return False
        stream = self.h2_conn.streams[event.stream_id]
        return not stream.state_machine.headers_sent and event.code.http_status_code() is not None
