"""The proxy's hot routes, dispatched without FastAPI's router and dependency machinery.

Every proxied request costs one `POST /v1/resolve`, every forward a `POST /v1/record`, every
waiting sibling a `POST /v1/wait`. Profiled under load (py-spy on the resolver, one client),
FastAPI's share of such a call — matching the path against every admin and UI route, solving
the router's dependencies, its exception and exit-stack middleware — cost about as much as the
resolve's own store transaction. This plain ASGI middleware sits inside the body limit and the
server-error middleware and sends those POSTs straight to the route functions that FastAPI also
mounts (so the OpenAPI document still describes them), after the same proxy-token guard. An
error becomes a response through the app's own exception handlers, looked up the way Starlette
looks them up, so a refused or invalid call gets the same problem+json either way. Everything
else — other methods, other paths — goes on to FastAPI unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

Endpoint = Callable[[Request], Awaitable[Response]]
Guard = Callable[[Request], Awaitable[None]]


class FastLane:
    def __init__(self, app: ASGIApp, *, routes: Mapping[str, Endpoint], guard: Guard) -> None:
        self.app = app
        self.routes = dict(routes)
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = None
        if scope["type"] == "http" and scope["method"] == "POST":
            endpoint = self.routes.get(scope["path"])
        if endpoint is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            await self.guard(request)
            response = await endpoint(request)
        except Exception as error:
            response = await _handled(request, error)
        await response(scope, receive, send)


async def _handled(request: Request, error: Exception) -> Response:
    """The app's answer to `error`, or `error` itself when no handler claims it (a 500)."""
    handlers: Mapping[Any, Callable[..., Any]] = request.app.exception_handlers
    for kind in type(error).__mro__:
        handler = handlers.get(kind)
        if handler is None:
            continue
        response = handler(request, error)
        if inspect.isawaitable(response):
            response = await response
        return response
    raise error
