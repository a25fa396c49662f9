"""A per-session MCPServer tool server for the MCP end-to-end tests (`-m tests.proxy.mcp_world`).

What tool-using agents talk to: the official SDK's MCPServer (mcp 2) over streamable HTTP (SSE
answers, one `Mcp-Session-Id` per client). `search` is declared read-only and answers a fresh random
number per call (exogenous noise: shared answers are visible as equal numbers); `write_note`
(not read-only) and `read_notes` (read-only) keep notes per session, so a branch's write is seen
by its own session's reads only. `GET /calls` counts what the server executed (and serves as its
health endpoint), so a test can tell how many calls reached the world.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse

CALLS: Counter[str] = Counter()
NOTES: dict[str, list[str]] = {}
READ_ONLY = ToolAnnotations(read_only_hint=True)


def session_of(ctx: Context) -> str:
    # mcp 2 hands each request a fresh ServerSession object; the session is the transport's id.
    headers = ctx.headers or {}
    return headers.get("mcp-session-id", "")


def build() -> MCPServer:
    server = MCPServer("mcp-world")

    @server.tool(annotations=READ_ONLY)
    def search(query: str) -> str:
        CALLS["search"] += 1
        return f"{query}: {random.random()}"

    @server.tool()
    def write_note(note: str, ctx: Context) -> str:
        CALLS["write_note"] += 1
        NOTES.setdefault(session_of(ctx), []).append(note)
        return "ok"

    @server.tool(annotations=READ_ONLY)
    def read_notes(ctx: Context) -> str:
        CALLS["read_notes"] += 1
        return ",".join(NOTES.get(session_of(ctx), [])) or "(none)"

    @server.custom_route("/calls", methods=["GET"])
    async def calls(_request: Request) -> JSONResponse:
        return JSONResponse(dict(CALLS))

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    # The proxy forwards the worker's own Host header; no DNS-rebinding check is at stake here.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    build().run(
        transport="streamable-http",
        host=options.host,
        port=options.port,
        transport_security=security,
    )


if __name__ == "__main__":
    main()
