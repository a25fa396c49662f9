"""Which exchanges pass through unrecorded, and why (the protocol's `passthrough` kinds).

A WebSocket or a request body over the size limit cannot be stored as one exchange and served
again byte for byte; these are forwarded by mitmproxy natively from the start. Responses
decide for themselves once their head arrives (`proxy.recording_stream`): over the limit
(`too-large`) or a stream that outlives its deadline (`streamed`). All are marked
`passthrough` and reported to the resolver so they are counted, never dropped.
"""

from __future__ import annotations

from enum import StrEnum

from mitmproxy import http

__all__ = ["Kind", "native_passthrough_kind"]


class Kind(StrEnum):
    STREAMED = "streamed"
    TOO_LARGE = "too-large"
    WEBSOCKET = "websocket"
    # A live read whose answer names a session the asker does not hold (proxy/sandbox_answers.py).
    SANDBOX = "sandbox"


def native_passthrough_kind(request: http.Request, body_too_large: bool) -> Kind | None:
    """The kind for a request mitmproxy must forward unrecorded from the start, or None."""
    if body_too_large:
        return Kind.TOO_LARGE
    if request.headers.get("upgrade", "").lower() == "websocket":
        return Kind.WEBSOCKET
    return None
