"""Refuse oversized request bodies before they are read into memory.

`/v1/resolve` and `/v1/record` carry bodies base64-encoded in JSON, so a body over
`max_body_bytes` makes a request about 4/3 larger; without this guard a huge upload would be
parsed in full before the route could say 413. Plain ASGI (not BaseHTTPMiddleware) so the hot
path pays almost nothing.
"""

from __future__ import annotations

from typing import Any

from resolver.errors import problem_response

LIMITED_PATHS = ("/v1/resolve", "/v1/record")
JSON_ENVELOPE_BYTES = 256 * 1024


class BodyLimit:
    def __init__(self, app: Any, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.limit = max_body_bytes * 4 // 3 + JSON_ENVELOPE_BYTES

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in LIMITED_PATHS:
            for name, value in scope.get("headers", []):
                if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                    response = problem_response(
                        413,
                        "body-too-large",
                        "Body too large",
                        f"request of {int(value)} bytes carries a body over max_body_bytes="
                        f"{self.max_body_bytes}; send body_too_large=true instead",
                        limit=self.max_body_bytes,
                    )
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
