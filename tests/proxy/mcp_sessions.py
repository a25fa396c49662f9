"""Drive the official MCP client (streamable HTTP) through the proxy as one branch.

Each branch is one `ClientSession` over its own httpx2 client (mcp 2's HTTP client), whose
proxy is Groundhog's and whose headers name the tape and branch. Every HTTP answer's decision is
logged with the JSON-RPC operation it answered, so a test can say which calls went live and
which were shared; the session id is read off the answers too (mcp 2's transport no longer
hands it out).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from groundhog.protocol.headers import BRANCH, DECISION, TAPE


@dataclass
class Branch:
    """One branch's MCP session and what its HTTP answers were decided."""

    name: str
    session: ClientSession
    session_id: str | None = None
    decisions: list[tuple[str, str, str]] = field(default_factory=list)

    def decided(self, operation: str) -> list[str]:
        return [decision for _method, op, decision in self.decisions if op == operation]

    async def text(self, tool: str, **arguments: object) -> str:
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, f"{self.name}: {tool} failed: {result.content}"
        block = result.content[0]
        assert block.type == "text"
        return block.text


def operation_of(request: httpx2.Request) -> str:
    if request.method != "POST":
        return request.method
    try:
        message = json.loads(request.content)
    except ValueError:
        return "?"
    method = message.get("method", "?")
    if method == "tools/call":
        return f"tools/call {message['params']['name']}"
    return method


@asynccontextmanager
async def mcp_branch(
    proxy_port: int, tape: str, branch: str, url: str, *, client_info: Implementation | None = None
) -> AsyncIterator[Branch]:
    """An initialised MCP session of `branch`; leaving it ends the session (its DELETE).
    `client_info`: the name and version the client says it is (default: the SDK's own)."""
    log: list[tuple[str, str, str]] = []
    session_ids: list[str] = []

    async def note(response: httpx2.Response) -> None:
        decision = response.headers.get(DECISION, "")
        log.append((response.request.method, operation_of(response.request), decision))
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])

    client = httpx2.AsyncClient(
        proxy=f"http://127.0.0.1:{proxy_port}",
        headers={TAPE: tape, BRANCH: branch},
        trust_env=False,
        timeout=httpx2.Timeout(60, read=300),
        event_hooks={"response": [note]},
    )
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, client_info=client_info) as session,
    ):
        await session.initialize()  # its answer names the session
        yield Branch(branch, session, session_ids[0] if session_ids else None, log)
