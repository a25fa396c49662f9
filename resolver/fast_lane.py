"""The proxy's hot routes, dispatched without FastAPI's router and dependency machinery.

Every proxied request costs one `POST /v1/resolve`, every forward a `POST /v1/record`, every
waiting sibling a `POST /v1/wait`. Profiled under load (py-spy on the resolver, one client),
FastAPI's share of such a call — matching the path against every admin and UI route, solving
the router's dependencies, its exception and exit-stack middleware — cost about as much as the
resolve's own store transaction. This plain ASGI middleware sits inside the body limit and the
server-error middleware and hands those POSTs' bodies straight to the functions behind the
routes FastAPI also mounts (`HotRoute`: body bytes to answer bytes; FastAPI's routes call the
same, so the OpenAPI document still describes them), after the same proxy-token guard. An error
becomes a response through the app's own exception handlers, looked up the way Starlette looks
them up (`handled`, which resolver/hot_protocol.py uses too), so a refused or invalid call gets
the same problem+json either way. Everything else — other methods, other paths — goes on to
FastAPI unchanged. Under `python -m resolver` uvicorn's protocol answers most such calls before
they reach any ASGI code (resolver/hot_protocol.py); this lane serves the rest, and every other
ASGI server.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

JSON = "application/json"  # what every hot route answers
# A hot route: the app's state and the request body's bytes to the JSON answer's bytes.
HotRoute = Callable[[Any, bytes], Awaitable[bytes]]
# Refuses a call (raises) given the app's state and its Authorization header ("" if none).
Guard = Callable[[Any, str], None]


def json_response(answer: bytes) -> Response:
    """A hot route's answer as the response every lane sends."""
    return Response(answer, media_type=JSON)


class FastLane:
    def __init__(self, app: ASGIApp, *, routes: Mapping[str, HotRoute], guard: Guard) -> None:
        self.app = app
        self.routes = dict(routes)
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = None
        if scope["type"] == "http" and scope["method"] == "POST":
            route = self.routes.get(scope["path"])
        if route is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        state = request.app.state
        try:
            self.guard(state, request.headers.get("authorization", ""))
            response = json_response(await route(state, await request.body()))
        except Exception as error:
            response = await handled(request, error)
        await response(scope, receive, send)


async def handled(request: Request, error: Exception) -> Response:
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
