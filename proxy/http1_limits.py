"""Bounds on an HTTP/1 request head, and problem answers for the heads mitmproxy refuses.

mitmproxy buffers a request head without limit (its own source says "FIXME: protect against
header size DoS") and accepts any number of header fields; a `Content-Length` of twenty digits
parses as a number and the request then fails upstream as `upstream-failed`. And when it
refuses a head itself (bad framing, an invalid `Content-Length`, a killed flow) it answers with
an HTML page that carries no `X-Groundhog-Decision`, so a worker cannot tell the proxy's refusal
from the world's answer.

`GroundhogHttp1Server` is mitmproxy's HTTP/1 server connection with exactly those changes: a
head over `groundhog_max_header_bytes` or with more than `groundhog_max_header_count` fields is
answered `431`; a `Content-Length` beyond 2^63-1 is `400`; every error page mitmproxy would
write to the client is a `refused` problem instead. And each request head on the connection,
not only the first, must complete within `groundhog_header_timeout` of its first byte, or it is
answered `408` and the connection closed: proxy/header_deadline.py bounds a connection's wait
for its first head from the moment it connects, but a kept-alive connection that got its answer
and then dribbles the next head one byte at a time would otherwise be held until mitmproxy's
`tcp_timeout` (600 s without any byte), never. An idle kept-alive connection (no byte of a next
head) starts no deadline. `GroundhogHttpLayer` (proxy/native.py) builds it in place of
`Http1Server`.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from mitmproxy.connection import ConnectionState
from mitmproxy.net.http import http1
from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.layers.http import (
    RequestHeaders,
    RequestProtocolError,
    ResponseProtocolError,
)
from mitmproxy.proxy.layers.http._base import ReceiveHttp
from mitmproxy.proxy.layers.http._http1 import Http1Server

from proxy import problems
from proxy.options import (
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_HEADER_COUNT,
    SECONDS_OPTIONS,
)

# A decimal Content-Length that fits a signed 64-bit integer has at most 19 digits.
MAX_CONTENT_LENGTH = 2**63 - 1
_MESSAGE = re.compile(rb"<p>(.*?)</p>", re.S)


def _option(options: Any, name: str, default: int) -> int:
    value = getattr(options, name, default)
    return value if isinstance(value, int) and value > 0 else default


def _header_timeout(options: Any) -> float:
    """`groundhog_header_timeout`, or its default where the option is missing or unusable (the
    addon refuses an unusable value at configure time; this layer must not raise meanwhile)."""
    default = SECONDS_OPTIONS["groundhog_header_timeout"][0]
    value = getattr(options, "groundhog_header_timeout", default)
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        return default
    return parsed if math.isfinite(parsed) and parsed > 0 else default


def refusal_bytes(status: int, slug: str, title: str, detail: str) -> bytes:
    response = problems.problem_response(status, slug, title, detail)
    response.headers["Connection"] = "close"
    return http1.assemble_response(response)


def head_too_large(buffer: bytes, limit: int) -> bool:
    """True when the first `limit` bytes hold no complete head (the end of its blank line)."""
    window = buffer[: limit + 2]
    return b"\n\r\n" not in window and b"\n\n" not in window


def oversized_length(request: Any) -> str | None:
    """The Content-Length value when it is beyond any body the proxy could take, else None."""
    for value in request.headers.get_all("content-length"):
        digits = value.strip()
        if digits.isdigit() and int(digits) > MAX_CONTENT_LENGTH:
            return digits
    return None


class GroundhogHttp1Server(Http1Server):
    # Which head of the connection a pending deadline is for: a head that completed in time
    # makes its wakeup stale (the next head, if any, has a wakeup of its own).
    _heads_done = 0
    _deadlines: dict[commands.RequestWakeup, int] | None = None

    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, events.Wakeup):
            yield from self._head_deadline(event.command)
            return
        yield from super()._handle_event(event)

    def _head_deadline(self, wakeup: commands.RequestWakeup) -> layer.CommandGenerator[None]:
        head = (self._deadlines or {}).pop(wakeup, None)
        if head != self._heads_done or self.state != self.read_headers:
            return  # that head completed (or the connection is done): nothing is late
        yield from self._refuse(
            408,
            "request-head-timeout",
            "Request head not received in time",
            f"the request head did not complete within {wakeup.delay:g} s of its first byte "
            "(groundhog_header_timeout); the connection is closed and nothing was forwarded",
        )

    def _refuse(
        self, status: int, slug: str, title: str, detail: str
    ) -> layer.CommandGenerator[None]:
        yield commands.SendData(self.conn, refusal_bytes(status, slug, title, detail))
        yield commands.CloseConnection(self.conn)
        self.state = self.done

    def read_headers(self, event: events.ConnectionEvent) -> layer.CommandGenerator[None]:
        yield from self._read_headers(event)
        if self.request is not None:
            self._heads_done += 1  # complete: its deadline, if one is pending, is stale now
        elif len(self.buf) > 0 and self.state == self.read_headers:
            yield from self._arm_deadline()  # part of a head has come: it is now on the clock

    def _arm_deadline(self) -> layer.CommandGenerator[None]:
        """A wakeup at the deadline of the head now arriving (one per head)."""
        deadlines = self._deadlines if self._deadlines is not None else {}
        self._deadlines = deadlines
        if self._heads_done in deadlines.values():
            return
        wakeup = commands.RequestWakeup(_header_timeout(self.context.options))
        deadlines[wakeup] = self._heads_done
        yield wakeup

    def _read_headers(self, event: events.ConnectionEvent) -> layer.CommandGenerator[None]:
        options = self.context.options
        if isinstance(event, events.DataReceived):
            limit = _option(options, "groundhog_max_header_bytes", DEFAULT_MAX_HEADER_BYTES)
            if len(self.buf) > limit and head_too_large(bytes(self.buf), limit):
                yield from self._refuse(
                    431,
                    "request-head-too-large",
                    "Request head too large",
                    f"the request line and headers exceed {limit} bytes "
                    "(groundhog_max_header_bytes); nothing was forwarded",
                )
                return
        for command in super().read_headers(event):
            if isinstance(command, commands.SendData) and command.connection is self.conn:
                # mitmproxy's error page for a head it cannot parse: the same, as a problem.
                found = _MESSAGE.search(command.data)
                message = html.unescape(found.group(1).decode("utf-8", "replace")) if found else ""
                message = message or "a malformed request line, header or HTTP version"
                yield commands.SendData(
                    self.conn,
                    refusal_bytes(
                        400,
                        "bad-request-head",
                        "Malformed request",
                        f"the request head cannot be parsed ({message}); nothing was forwarded",
                    ),
                )
                continue
            if isinstance(command, ReceiveHttp) and isinstance(command.event, RequestHeaders):
                refusal = self._head_refusal(command.event)
                if refusal is not None:
                    yield from self._refuse(*refusal)
                    return
            yield command

    def _head_refusal(self, event: RequestHeaders) -> tuple[int, str, str, str] | None:
        options = self.context.options
        count = _option(options, "groundhog_max_header_count", DEFAULT_MAX_HEADER_COUNT)
        fields = len(event.request.headers.fields)
        if fields > count:
            return (
                431,
                "too-many-headers",
                "Too many request headers",
                f"the request carries {fields} header fields, over {count} "
                "(groundhog_max_header_count); nothing was forwarded",
            )
        oversized = oversized_length(event.request)
        if oversized is not None:
            return (
                400,
                "bad-content-length",
                "Content-Length out of range",
                f"Content-Length {oversized[:40]} is beyond {MAX_CONTENT_LENGTH} bytes; "
                "nothing was forwarded",
            )
        return None

    def read_body(self, event: events.Event) -> layer.CommandGenerator[None]:
        # mitmproxy closes the connection on a body framing error without a word; the worker
        # is told why first (while it has not been sent any answer).
        closing: commands.CloseConnection | None = None
        for command in super().read_body(event):
            if isinstance(command, commands.CloseConnection) and command.connection is self.conn:
                closing = command
                continue
            if (
                closing is not None
                and isinstance(command, ReceiveHttp)
                and isinstance(command.event, RequestProtocolError)
                and not self.response
                and self.conn.state & ConnectionState.CAN_WRITE
            ):
                detail = f"the request body is malformed ({command.event.message})"
                yield commands.SendData(
                    self.conn,
                    refusal_bytes(
                        400,
                        "bad-request-body",
                        "Malformed request body",
                        f"{detail}; the request goes no further",
                    ),
                )
            if closing is not None:
                yield closing
                closing = None
            yield command
        if closing is not None:
            yield closing

    def send(self, event: Any) -> layer.CommandGenerator[None]:
        if (
            isinstance(event, ResponseProtocolError)
            and not self.response
            and self.conn.state & ConnectionState.CAN_WRITE
        ):
            status = event.code.http_status_code()
            if status is not None:
                yield commands.SendData(
                    self.conn,
                    refusal_bytes(
                        status,
                        "proxy-refused",
                        "The proxy refused the request",
                        f"{event.message}; nothing more was forwarded",
                    ),
                )
            yield commands.CloseConnection(self.conn)
            return
        yield from super().send(event)
