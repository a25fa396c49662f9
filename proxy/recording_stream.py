"""How a live response travels to the worker: buffered, streamed while recorded, or passed.

A response must reach the worker as it arrives whatever the request said, be recorded when it
fits under the body limit, and never be held whole in memory. The choice is made from the
response head alone (`plan_response`, a pure function): a body of known size under the limit
that is not an event stream is buffered by mitmproxy (bounded by its Content-Length) so the
worker can be served exactly what the resolver stored; a known size over the limit passes
through; anything else streams, teed by `BodyTee` into a buffer that is dropped the moment it
would exceed the limit.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from mitmproxy import http
from mitmproxy.net.http.http1 import expected_http_body_size


class Plan(StrEnum):
    BUFFER = "buffer"  # known size within the limit: record, then serve the stored answer
    STREAM = "stream"  # unknown size or an event stream: flows now, recorded while it flows
    TOO_LARGE = "too-large"  # known size over the limit: flows now, never recorded


def is_event_stream(response: http.Response) -> bool:
    return response.headers.get("content-type", "").lower().startswith("text/event-stream")


def body_size(flow: http.HTTPFlow) -> int | None:
    """The body size the head announces; None when unknown (chunked, until close, HTTP/2)."""
    assert flow.response is not None
    try:
        size = expected_http_body_size(flow.request, flow.response)
    except ValueError:
        return None  # a malformed length: treat as unknown and let it stream
    if size is None or size < 0:
        return None
    if flow.response.is_http2 or flow.response.is_http3:
        # An HTTP/2 Content-Length is advisory for framing; the stream's end is authoritative.
        return size if "content-length" in flow.response.headers else None
    return size


def plan_response(flow: http.HTTPFlow, max_body_bytes: int) -> Plan:
    assert flow.response is not None
    size = body_size(flow)
    if size is not None and size > max_body_bytes:
        return Plan.TOO_LARGE
    if size is None or is_event_stream(flow.response):
        return Plan.STREAM
    return Plan.BUFFER


def needs_chunked_framing(flow: http.HTTPFlow) -> bool:
    """An HTTP/1 worker must be able to tell a cut stream from a finished one.

    A streamed response with neither Content-Length nor chunked coding ends when the
    connection closes, and so does one the proxy aborts; chunked coding makes the cut visible.
    """
    assert flow.response is not None
    if not flow.request.http_version.startswith("HTTP/1"):
        return False
    headers = flow.response.headers
    return (
        "content-length" not in headers
        and "chunked" not in headers.get("transfer-encoding", "").lower()
    )


class BodyTee:
    """mitmproxy's `response.stream` callable: passes every chunk on, keeps a capped copy.

    Once the copy would exceed `limit` it is dropped (`over_limit`) and the rest only flows;
    `ended` is set when mitmproxy signals the end of the body (an empty chunk).
    """

    def __init__(self, limit: int, on_over_limit: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self.on_over_limit = on_over_limit
        self.buffer: bytearray | None = bytearray()
        self.size = 0
        self.over_limit = False
        self.ended = False

    def __call__(self, chunk: bytes) -> bytes:
        if not chunk:
            self.ended = True
            return chunk
        self.size += len(chunk)
        if self.buffer is not None:
            if self.size > self.limit:
                self.drop()
                self.over_limit = True
                if self.on_over_limit is not None:
                    self.on_over_limit()
            else:
                self.buffer += chunk
        return chunk

    def drop(self) -> None:
        """Stop keeping a copy (the stream became passthrough)."""
        self.buffer = None

    @property
    def recording(self) -> bool:
        return self.buffer is not None

    def body(self) -> bytes:
        return bytes(self.buffer or b"")
