"""A per-session FastMCP tool server for the MCP end-to-end tests (`-m tests.proxy.mcp_world`).

What tool-using agents talk to: the official SDK's FastMCP over streamable HTTP (SSE answers,
one `Mcp-Session-Id` per client). `search` is declared read-only and answers a fresh random
number per call (exogenous noise: shared answers are visible as equal numbers); `write_note`
(not read-only) and `read_notes` (read-only) keep notes per session, so a branch's write is seen
by its own session's reads only. `GET /calls` counts what the server executed (and serves as its
health endpoint), so a test can tell how many calls reached the world.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse

CALLS: Counter[str] = Counter()
NOTES: dict[int, list[str]] = {}
READ_ONLY = ToolAnnotations(readOnlyHint=True)


def build(host: str, port: int) -> FastMCP:
    # The proxy forwards the worker's own Host header; no DNS-rebinding check is at stake here.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    server = FastMCP("mcp-world", host=host, port=port, transport_security=security)

    @server.tool(annotations=READ_ONLY)
    def search(query: str) -> str:
        CALLS["search"] += 1
        return f"{query}: {random.random()}"

    @server.tool()
    def write_note(note: str, ctx: Context) -> str:
        CALLS["write_note"] += 1
        NOTES.setdefault(id(ctx.session), []).append(note)
        return "ok"

    @server.tool(annotations=READ_ONLY)
    def read_notes(ctx: Context) -> str:
        CALLS["read_notes"] += 1
        return ",".join(NOTES.get(id(ctx.session), [])) or "(none)"

    @server.custom_route("/calls", methods=["GET"])
    async def calls(_request: Request) -> JSONResponse:
        return JSONResponse(dict(CALLS))

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    build(options.host, options.port).run(transport="streamable-http")


if __name__ == "__main__":
    main()
