"""The third benchmark world: a travel desk whose tools are served over MCP streamable HTTP.

Real agents reach their tools over MCP, not REST: every call is a POST whose operation sits in a
JSON-RPC body and whose sandbox is the `Mcp-Session-Id` the server handed out. This world is
built with the official SDK's `MCPServer` (mcp >= 2), declares `search_flights`,
`flight_details` and `my_trip` read-only (`readOnlyHint`) and `hold` / `book` writing, and keeps
one trip per MCP session. It is uncooperative: it reads no `X-Groundhog-*` header and draws its
own noise per call (the day, `?day=N` in the endpoint URL, is the slow state a group shares).
Beside `/mcp` it serves the control routes the benchmark reads (`/healthz`, `/_stats`,
`/_reset`, `/_oracle/served`), as the HTTP worlds do, and `/_draws` (a session's calls, each
with the world call number its noise came from: bench/mcp_live_check.py re-renders them).
Start it with `python -m worldsim --world mcp --port P` (or `python -m worldsim.mcp_world`); its
state lives in worldsim/mcp_state.py, what its tools compute in worldsim/mcp_desk.py. Without
it the benchmark could not show Groundhog sharing an MCP agent's tool reads while keeping its
writes.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import urllib.parse
from collections.abc import Sequence
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worldsim import mcp_desk
from worldsim.errors import WorldError
from worldsim.mcp_state import Desk

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8091
MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
READ_ONLY = ToolAnnotations(read_only_hint=True)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False)


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
        dropped = desk.reset(*request.query_params.getlist("branch"))
        return JSONResponse({"dropped": dropped, "sandboxes": len(desk.sessions())})

    @server.custom_route("/_branches", methods=["GET"])
    async def branches(_request: Request) -> Response:
        return JSONResponse({"branches": desk.sessions()})

    @server.custom_route("/_draws", methods=["GET"])
    async def draws(request: Request) -> Response:
        try:
            calls = desk.draws(request.query_params.get("session", ""))
        except WorldError as error:
            return JSONResponse(error.problem(), status_code=error.status)
        return JSONResponse(
            {"draws": [{"tool": t, "arguments": a, "call": n} for t, a, n in calls]}
        )

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
    options: dict[str, Any] = {"streamable_http_path": MCP_PATH, "transport_security": security}
    # mcp 2.2 caps live sessions (below a benchmark's sandboxes) unless told; mcp 2.0, which
    # verifiers 0.4.0 pins and a fresh install may resolve to, has no cap and no such argument.
    if "max_sessions" in inspect.signature(MCPServer.streamable_http_app).parameters:
        options["max_sessions"] = sandbox_cap
    app = build_server(desk).streamable_http_app(**options)
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
