"""Refuse oversized request bodies before they are read into memory.

`/v1/resolve` and `/v1/record` carry bodies base64-encoded in JSON, so a body over
`max_body_bytes` makes a request about 4/3 larger; the admin routes take small JSON documents.
Without this guard any route would read and parse a huge upload in full before it could say
413 (a 32 MiB JSON body to `POST /v1/tapes` cost the resolver ~80 MiB before its 422). One limit
covers every route: `max_body_bytes` in base64 plus a JSON envelope. `POST /v1/tapes/import` is
exempt: it streams a whole tape file to disk and enforces its own, much larger, limit.

A declared `Content-Length` over the limit is refused at once. A chunked body (no length) is
buffered here up to the limit and refused as soon as it passes it; under the limit it is handed
to the route unchanged. Plain ASGI (not BaseHTTPMiddleware) so the hot path pays almost nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from resolver.problem_handlers import problem_response

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

INTERNAL_PATHS = ("/v1/resolve", "/v1/record")
UNLIMITED_PATHS = ("/v1/tapes/import",)
JSON_ENVELOPE_BYTES = 256 * 1024


def body_limit(max_body_bytes: int) -> int:
    """The most bytes a request body may have: `max_body_bytes` in base64, in its envelope."""
    return max_body_bytes * 4 // 3 + JSON_ENVELOPE_BYTES


class BodyLimit:
    def __init__(self, app: Any, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.limit = body_limit(max_body_bytes)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNLIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        length = headers.get(b"content-length")
        if length is not None:
            if length.isdigit() and int(length) > self.limit:
                await self._refuse(scope, int(length), receive, send)
                return
        elif b"transfer-encoding" in headers:
            buffered = await self._buffer(receive)
            if buffered is None:
                await self._refuse(scope, None, receive, send)
                return
            receive = _replay(buffered, receive)
        await self.app(scope, receive, send)

    async def _buffer(self, receive: Receive) -> bytes | None:
        """The whole chunked body, or None as soon as it passes the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away; the route will see an empty body and stop
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _refuse(
        self, scope: dict[str, Any], length: int | None, receive: Receive, send: Send
    ) -> None:
        size = f"of {length} bytes" if length is not None else "sent in chunks"
        if scope["path"] in INTERNAL_PATHS:
            detail = (
                f"request {size} carries a body over max_body_bytes={self.max_body_bytes}; "
                "send body_too_large=true instead"
            )
        else:
            detail = (
                f"request {size} is over the {self.limit}-byte limit for {scope['path']} "
                f"(max_body_bytes={self.max_body_bytes} in base64 plus a JSON envelope); "
                "admin requests are small JSON documents"
            )
        response = problem_response(
            413, "body-too-large", "Body too large", detail, limit=self.max_body_bytes
        )
        await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over the buffered body once, then defers to the real one."""
    delivered = False

    async def replayed() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
