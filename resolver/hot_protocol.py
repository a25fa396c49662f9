"""uvicorn's HTTP protocol, answering the proxy's hot routes itself, before any ASGI machinery.

Every proxied request costs one `POST /v1/resolve`, and on a hit that call is all Groundhog
adds to mitmproxy's own work. Through the ASGI app the call pays for uvicorn's per-request cycle
(scope, task, ASGI messages), the ASGI middleware stack (proxy headers, server errors, FastAPI's
telemetry and body limit, ours), Starlette's request object and FastAPI's router and
dependencies. Measured with the order of the two alternated: asked directly with the proxy's
client, one call at a time, a resolve cost the resolver 1.22 ms of CPU instead of 1.32 ms
(median of 6 rounds of 1000); a PostgreSQL hit through `bench.resolver_perf` answered in
6.9 to 7.1 ms instead of 7.2 to 7.8 ms (p50, two alternations). Through the proxy, on this
2-core host, the difference is within the noise (hit p50 5.56 vs 5.62 ms, 9 rounds).

This subclass of uvicorn's httptools protocol takes a request into that lane only when nothing
about it is unusual: `POST` to a hot path exactly, HTTP/1.1 keep-alive, a `Content-Length`
within the body limit, no `Transfer-Encoding`, `Expect` or upgrade, and no earlier request on
the connection still in flight or queued. Everything else — admin routes, chunked or oversized
bodies, pipelined requests — goes through uvicorn and the app exactly as before, where FastAPI's
routes (resolver/routes/internal.py) call the same functions (`HotRoute`: body bytes to answer
bytes) behind the same guard, so the answers are the same. A lane error becomes the response
the app's own exception handlers give (`handled`: problem+json); an error no handler claims is
logged and answered 500 problem+json. Under any other ASGI server the plain routes answer.

While a lane request is in flight it stands in uvicorn's `cycle` slot (`_LaneCycle`), so
uvicorn's own code treats it as a request in flight: a pipelined request queues behind it,
a graceful shutdown lets it finish and closes the connection after it, and a lost connection
drops its answer.
"""

from __future__ import annotations

import asyncio
import http
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from resolver.limits import body_limit
from resolver.problem_handlers import problem_response

logger = logging.getLogger(__name__)

JSON = "application/json"  # what every hot route answers
# A hot route: the app's state and the request body's bytes to the JSON answer's bytes.
HotRoute = Callable[[Any, bytes], Awaitable[bytes]]
# Refuses a call (raises) given the app's state and its Authorization header ("" if none).
Guard = Callable[[Any, str], None]

REASONS = {status.value: status.phrase.encode() for status in http.HTTPStatus}


@dataclass(frozen=True, slots=True)
class _LaneRequest:
    url: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


class _LaneCycle:
    """What uvicorn's protocol reads of a request cycle, for a request the lane answers."""

    def __init__(self) -> None:
        self.response_complete = False
        self.disconnected = False
        self.keep_alive = True
        self.message_event = asyncio.Event()


def json_response(answer: bytes) -> Response:
    """A hot route's answer as the response every lane sends."""
    return Response(answer, media_type=JSON)


async def handled(request: Request, error: Exception) -> Response:
    """The app's answer to `error`, looked up the way Starlette looks it up, or `error` itself
    when no handler claims it (a 500)."""
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


def protocol_for(
    app: Any, routes: Mapping[str, HotRoute], *, guard: Guard, max_body_bytes: int
) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, answering `routes` for `app` (pass it as `http=`)."""
    paths = {path.encode("ascii"): route for path, route in routes.items()}
    limit = body_limit(max_body_bytes)

    class HotRoutesProtocol(HttpToolsProtocol):
        answered = 0  # requests the lane answered, for tests and the curious

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._route: HotRoute | None = None
            self._body: list[bytes] = []

        def on_headers_complete(self) -> None:
            self._route = self._lane_route()
            if self._route is None:
                super().on_headers_complete()

        def _lane_route(self) -> HotRoute | None:
            """The route to answer in the lane, or None to leave the request to uvicorn."""
            parser = self.parser
            route = paths.get(self.url)
            if route is None or parser.get_method() != b"POST" or self.limit_concurrency:
                return None
            if parser.get_http_version() != "1.1" or not parser.should_keep_alive():
                return None
            if parser.should_upgrade() or self.expect_100_continue or self.pipeline:
                return None
            if self.cycle is not None and not self.cycle.response_complete:
                return None  # an answer still owed: uvicorn queues this one behind it
            length = None
            for name, value in self.headers:
                if name == b"transfer-encoding":
                    return None
                if name == b"content-length":
                    length = value
            if length is None or not length.isdigit() or int(length) > limit:
                return None  # the app's body limit answers an oversized body
            return route

        def on_body(self, body: bytes) -> None:
            if self._route is None:
                super().on_body(body)
            else:
                self._body.append(body)

        def on_message_complete(self) -> None:
            route = self._route
            if route is None:
                super().on_message_complete()
                return
            self._route = None
            cycle = _LaneCycle()
            self.cycle = cycle  # type: ignore[assignment]  # read by uvicorn as a cycle
            # The URL and headers are this request's: a pipelined one may replace them meanwhile.
            request = _LaneRequest(self.url, self.headers, b"".join(self._body))
            answer = self._answer(cycle, route, request)
            task = self.loop.create_task(answer)
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)

        async def _answer(self, cycle: _LaneCycle, route: HotRoute, request: _LaneRequest) -> None:
            response = await self._response(route, request)
            cycle.response_complete = True
            cycle.message_event.set()
            if cycle.disconnected or self.transport.is_closing():
                return
            # A graceful shutdown that began meanwhile ends the connection after this answer.
            self.transport.write(self._serialised(response, keep_alive=cycle.keep_alive))
            type(self).answered += 1
            if not cycle.keep_alive:
                self.transport.close()
            self.on_response_complete()

        async def _response(self, route: HotRoute, lane_request: _LaneRequest) -> Response:
            authorization = ""
            for name, value in lane_request.headers:
                if name == b"authorization":
                    authorization = value.decode("latin-1")
            try:
                guard(app.state, authorization)
                return json_response(await route(app.state, lane_request.body))
            except Exception as error:
                request = Request(self._scope_for(lane_request))
                try:
                    return await handled(request, error)
                except Exception:
                    logger.exception("the resolver failed answering %s", request.url.path)
                    return problem_response(
                        500,
                        "server-error",
                        "Server error",
                        f"the resolver failed answering {request.url.path}; its log says why",
                    )

        def _scope_for(self, request: _LaneRequest) -> dict[str, Any]:
            """Enough of an ASGI scope for the app's exception handlers."""
            return {
                **self.scope,  # the connection's part (server, client, scheme) is what counts
                "app": app,
                "path": request.url.decode("ascii"),
                "raw_path": request.url,
                "query_string": b"",
                "headers": request.headers,
                "method": "POST",
            }

        def _serialised(self, response: Response, *, keep_alive: bool) -> bytes:
            status = response.status_code
            lines = [b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, b""))]
            for name, value in (*self.server_state.default_headers, *response.raw_headers):
                lines += [name, b": ", value, b"\r\n"]
            lines.append(b"\r\n" if keep_alive else b"connection: close\r\n\r\n")
            return b"".join(lines) + bytes(response.body)

    return HotRoutesProtocol
