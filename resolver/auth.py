"""Bearer-token guards for the admin and internal routes.

With `GROUNDHOG_ADMIN_TOKEN` / `GROUNDHOG_PROXY_TOKEN` set, a resolver reachable from a cluster
network must not let any pod rewrite tapes or record answers. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Request

from resolver.errors import Unauthorized


def check_bearer(header: str, expected: str | None, role: str) -> None:
    """Refuse an Authorization header that does not carry the `role`'s token, if one is set."""
    if not expected:
        return
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), expected.encode()):
        raise Unauthorized(
            f"this route needs 'Authorization: Bearer <{role} token>' "
            f"(set by GROUNDHOG_{role.upper()}_TOKEN on the resolver)"
        )


# Async on purpose: FastAPI runs sync dependencies in the threadpool, one more hop per request.
async def require_admin(request: Request) -> None:
    check_bearer(
        request.headers.get("authorization", ""), request.app.state.settings.admin_token, "admin"
    )


async def require_proxy(request: Request) -> None:
    check_proxy(request.app.state, request.headers.get("authorization", ""))


def check_proxy(state: Any, authorization: str) -> None:
    """The proxy-token guard of the hot lanes (resolver/hot_protocol.py),
    given the app's state and the call's Authorization header."""
    check_bearer(authorization, state.settings.proxy_token, "proxy")
