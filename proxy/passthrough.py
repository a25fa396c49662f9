"""Which exchanges pass through unrecorded, and why (the protocol's `passthrough` kinds).

A WebSocket, an event stream or a body over the size limit cannot be stored as one exchange
and served again byte for byte; recording it would either hang or truncate. These go through
marked `passthrough` and are reported to the resolver so they are counted, never dropped.
"""

from __future__ import annotations

from mitmproxy import http

from proxy.upstream import UpstreamResponse

PASSTHROUGH = "passthrough"


def native_passthrough_kind(request: http.Request, body_too_large: bool) -> str | None:
    """The kind for a request mitmproxy must forward itself (streamed), or None."""
    if body_too_large:
        return "too-large"
    if request.headers.get("upgrade", "").lower() == "websocket":
        return "websocket"
    if "text/event-stream" in request.headers.get("accept", "").lower():
        return "streamed"
    return None


def fetched_passthrough_kind(fetched: UpstreamResponse) -> str | None:
    """The kind for a fetched response that must not be recorded, or None."""
    if fetched.too_large:
        return "too-large"
    for name, value in fetched.fields:
        if name.lower() == b"content-type" and value.lower().startswith(b"text/event-stream"):
            return "streamed"
    return None
