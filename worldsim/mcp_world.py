"""The third benchmark world: a travel desk whose tools are served over MCP streamable HTTP.

Real agents reach their tools over MCP, not REST: every call is a POST whose operation sits in a
JSON-RPC body and whose sandbox is the `Mcp-Session-Id` the server handed out. This world is
built with the official SDK's `MCPServer` (mcp >= 2), declares `search_flights`,
`flight_details` and `my_trip` read-only (`readOnlyHint`) and `hold` / `book` writing, and keeps
one trip per MCP session. It is uncooperative: it reads no `X-Groundhog-*` header and draws its
own noise per call (the day, `?day=N` in the endpoint URL, is the slow state a group shares).
Beside `/mcp` it serves the control routes the benchmark reads (`/healthz`, `/_stats`,
`/_reset`, `/_oracle/served`), as the HTTP worlds do. Start it with
`python -m worldsim --world mcp --port P` (or `python -m worldsim.mcp_world`). Without it the
benchmark could not show Groundhog sharing an MCP agent's tool reads while keeping its writes.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import threading
import urllib.parse
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worldsim import mcp_desk, noise, render
from worldsim.errors import UnknownServed, UnknownSession, WorldError

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8091
MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
SERVED_LOG_LIMIT = 500_000
READ_ONLY = ToolAnnotations(read_only_hint=True)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False)


@dataclass(frozen=True)
class Draw:
    """The exogenous inputs of one answer: the day (slow state) and the per-call seed."""

    epoch: int
    seed: int
    occurrence: int


@dataclass(frozen=True)
class Served:
    """A read the world answered, kept so the oracle can re-render it against any trip."""

    tool: str
    arguments: dict[str, object]
    draw: Draw
    body_sha256: str


@dataclass
class Sandbox:
    """One MCP session's trip, its day and its own per-call occurrence counters."""

    epoch: int
    trip: mcp_desk.Trip = field(default_factory=mcp_desk.Trip)
    counters: Counter[str] = field(default_factory=Counter)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Desk:
    """The world's state: a sandbox per MCP session, call statistics and the served-read log."""

    def __init__(self, seed: int = 0, *, sandbox_cap: int = 4096) -> None:
        self.seed = seed
        self.sandbox_cap = sandbox_cap
        self._sandboxes: dict[str, Sandbox] = {}
        self._calls: Counter[tuple[str, str]] = Counter()
        self._live_calls = 0
        self._sessions_opened = 0
        self._served: OrderedDict[str, Served] = OrderedDict()
        self._lock = threading.Lock()

    def open_session(self, session: str, day: int | None) -> None:
        """A new session's sandbox, on day ``day`` (the world's seed when none is named)."""
        with self._lock:
            if session in self._sandboxes:
                return
            if len(self._sandboxes) >= self.sandbox_cap:
                # Its tool calls will be refused (UnknownSession): the answer is already on
                # its way, so the session cannot be refused here.
                logger.warning("%s sandboxes exist; session not given one", self.sandbox_cap)
                return
            self._sessions_opened += 1
            self._sandboxes[session] = Sandbox(epoch=self.seed if day is None else day)

    def call(self, session: str, tool: str, arguments: dict[str, object]) -> dict[str, object]:
        """Run one tool for ``session``: a fresh noise draw per call (uncooperative)."""
        with self._lock:
            sandbox = self._sandboxes.get(session)
            if sandbox is None:
                raise UnknownSession(
                    "the MCP session has no sandbox (never opened, or reset)",
                    {"session": session[:80]},
                )
            self._calls[(session, tool)] += 1
            self._live_calls += 1
            seed = noise.salted_seed(self.seed, f"call:{self._live_calls}")
            key = mcp_desk.tool_key(tool, arguments)
            occurrence = sandbox.counters[key]
            sandbox.counters[key] += 1
            if tool in mcp_desk.WRITE_TOOLS:
                return mcp_desk.write(
                    sandbox.trip, self.seed, seed, tool, arguments, occurrence, sandbox.epoch
                )
            draw = Draw(sandbox.epoch, seed, occurrence)
            payload = mcp_desk.read(
                sandbox.trip, self.seed, seed, tool, arguments, occurrence, sandbox.epoch
            )
            body = render.encode(payload)
            # The id names the answer (its noise and its bytes): equal answers, equal ids.
            tag = f"{draw.epoch}|{draw.seed}|{draw.occurrence}|{key}|".encode()
            request_id = _sha(tag + body)[:24]
            self._served[request_id] = Served(tool, dict(arguments), draw, _sha(body))
            while len(self._served) > SERVED_LOG_LIMIT:
                self._served.popitem(last=False)
            return {**payload, "request_id": request_id}

    def grade(self, request_id: str, session: str) -> dict[str, object]:
        """Was a served read true for ``session`` now, with the noise it was served with?"""
        with self._lock:
            served = self._served.get(request_id)
            if served is None:
                raise UnknownServed(
                    f"the world has no served read {request_id!r}", {"request_id": request_id}
                )
            sandbox = self._sandboxes.get(session)
            if sandbox is None:
                raise UnknownServed(f"no sandbox {session[:80]!r}", {"sandbox": session[:80]})
            now = self._render(sandbox.trip, served)
            base = self._render(mcp_desk.Trip(), served)
        return {
            "request_id": request_id,
            "path": served.tool,
            "stale": now != served.body_sha256,
            "changed": now != base,
        }

    def _render(self, trip: mcp_desk.Trip, served: Served) -> str:
        draw = served.draw
        payload = mcp_desk.read(
            trip, self.seed, draw.seed, served.tool, served.arguments, draw.occurrence, draw.epoch
        )
        return _sha(render.encode(payload))

    def reset(self, session: str | None = None) -> list[str]:
        with self._lock:
            if session is None:
                dropped = sorted(self._sandboxes)
                self._sandboxes.clear()
                return dropped
            return [session] if self._sandboxes.pop(session, None) is not None else []

    def stats(self) -> dict[str, object]:
        with self._lock:
            endpoints: Counter[str] = Counter()
            branches: dict[str, dict[str, int]] = {}
            for (session, tool), count in sorted(self._calls.items()):
                endpoints[f"tools/call {tool}"] += count
                per = branches.setdefault(session, {"total": 0})
                per[tool] = count
                per["total"] += count
            return {
                "total": sum(endpoints.values()),
                "endpoints": dict(sorted(endpoints.items())),
                "branches": branches,
                "sandboxes": len(self._sandboxes),
                "sessions_opened": self._sessions_opened,
            }

    def reset_stats(self) -> None:
        with self._lock:
            self._calls.clear()

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._sandboxes)


def _session_of(ctx: Context) -> str:
    return (ctx.headers or {}).get(SESSION_HEADER, "")


def _run(desk: Desk, ctx: Context, tool: str, arguments: dict[str, object]) -> str:
    try:
        return mcp_desk.encode_answer(desk.call(_session_of(ctx), tool, arguments))
    except WorldError as error:
        raise ToolError(error.detail) from error


def build_server(desk: Desk) -> MCPServer:
    """The MCP server: three read-only tools, two writing tools, and the control routes."""
    server = MCPServer("groundhog-travel-desk")

    @server.tool(annotations=READ_ONLY)
    def search_flights(ctx: Context) -> str:
        """Today's flights in a ranked list, each with a fare quote (a signed token)."""
        return _run(desk, ctx, "search_flights", {})

    @server.tool(annotations=READ_ONLY)
    def flight_details(flight: str, ctx: Context) -> str:
        """One flight's value and a fresh fare quote."""
        return _run(desk, ctx, "flight_details", {"flight": flight})

    @server.tool(annotations=READ_ONLY)
    def my_trip(ctx: Context) -> str:
        """This session's held flight and, once something is held, its upgrade voucher."""
        return _run(desk, ctx, "my_trip", {})

    @server.tool(annotations=WRITES)
    def hold(quote: str, ctx: Context) -> str:
        """Hold the quoted flight at the quoted fare (one hold per session)."""
        return _run(desk, ctx, "hold", {"quote": quote})

    @server.tool(annotations=WRITES)
    def book(ctx: Context, voucher: str | None = None) -> str:
        """Book the held flight at its quoted fare plus a fee, minus a matching voucher."""
        return _run(desk, ctx, "book", {} if voucher is None else {"voucher": voucher})

    _control_routes(server, desk)
    return server


def _control_routes(server: MCPServer, desk: Desk) -> None:
    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @server.custom_route("/_stats", methods=["GET"])
    async def stats(_request: Request) -> Response:
        return JSONResponse(desk.stats())

    @server.custom_route("/_stats/reset", methods=["POST"])
    async def reset_stats(_request: Request) -> Response:
        desk.reset_stats()
        return JSONResponse(desk.stats())

    @server.custom_route("/_reset", methods=["POST"])
    async def reset(request: Request) -> Response:
        dropped = desk.reset(request.query_params.get("branch"))
        return JSONResponse({"dropped": dropped, "sandboxes": len(desk.sessions())})

    @server.custom_route("/_branches", methods=["GET"])
    async def branches(_request: Request) -> Response:
        return JSONResponse({"branches": desk.sessions()})

    @server.custom_route("/_oracle/served", methods=["POST"])
    async def judge_served(request: Request) -> Response:
        batch = await request.json()
        reads = batch.get("reads") if isinstance(batch, dict) else None
        if not isinstance(reads, list):
            return JSONResponse({"detail": "expected {'reads': [...]}"}, status_code=422)
        results = []
        try:
            for read in reads:
                results.append(desk.grade(str(read["request_id"]), str(read["sandbox"])))
        except (KeyError, TypeError):
            return JSONResponse({"detail": "each read names request_id and sandbox"}, 422)
        except WorldError as error:
            return JSONResponse(error.problem(), status_code=error.status)
        return JSONResponse({"results": results})


def _day(scope: Scope) -> int | None:
    query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
    values = query.get("day", [])
    try:
        return int(values[0]) if values else None
    except ValueError:
        return None


class SessionSandboxes:
    """ASGI middleware: a new `Mcp-Session-Id` in an answer opens that session's sandbox.

    The SDK mints the id while answering `initialize`, before any tool runs; the sandbox must
    exist from then on, so the oracle can grade a session whose every read was served from a
    tape (it never called a tool live). The day comes from the endpoint's `?day=N`.
    """

    def __init__(self, app: ASGIApp, desk: Desk) -> None:
        self.app = app
        self.desk = desk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(MCP_PATH):
            await self.app(scope, receive, send)
            return
        asked = any(name.lower() == SESSION_HEADER.encode() for name, _ in scope["headers"])
        day = _day(scope)

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start" and not asked:
                for name, value in message.get("headers", []):
                    if name.lower() == SESSION_HEADER.encode():
                        self.desk.open_session(value.decode("latin-1"), day)
            await send(message)

        await self.app(scope, receive, noting)


def create_app(seed: int = 0, *, sandbox_cap: int = 4096) -> tuple[ASGIApp, Desk]:
    """The world's ASGI app (MCP at /mcp plus the control routes) and its state."""
    desk = Desk(seed, sandbox_cap=sandbox_cap)
    # The proxy forwards the worker's own Host header; no DNS-rebinding check is at stake here.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = build_server(desk).streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=security, max_sessions=sandbox_cap
    )
    return SessionSandboxes(app, desk), desk


def run(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    seed: int | None = None,
    *,
    sandbox_cap: int | None = None,
    log_level: str = "warning",
) -> None:
    """Serve the MCP world until interrupted (no Date or Server header: nothing host-derived)."""
    app, _desk = create_app(seed or 0, sandbox_cap=sandbox_cap or 4096)
    logger.info("MCP world seed %s on %s:%s", seed, host, port)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        date_header=False,
        server_header=False,
        access_log=False,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m worldsim.mcp_world", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sandbox-cap", type=int, default=4096)
    parser.add_argument("--log-level", default="warning")
    options = parser.parse_args(argv)
    logging.basicConfig(level=options.log_level.upper())
    run(
        options.host,
        options.port,
        options.seed,
        sandbox_cap=options.sandbox_cap,
        log_level=options.log_level,
    )


if __name__ == "__main__":
    main()
