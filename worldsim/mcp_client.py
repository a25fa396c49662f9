"""The MCP world's agent side of the wire: the official MCP client as the agent's tool caller.

The agent (worldsim/mcp_agent.py) calls tools; this module makes those calls with the SDK's
`ClientSession` over `streamable_http_client` (mcp >= 2, whose HTTP client is httpx2), through
a proxy when one is given, with the headers that name a Groundhog tape and branch. Every HTTP
answer is logged with the JSON-RPC operation it answered, so each tool reply carries its
`X-Groundhog-Decision` and `X-Groundhog-Fingerprint`, and the session id is read off the
`initialize` answer (the SDK no longer hands it out). Without it the benchmark's MCP rollouts
would not be driven by the real client, and could not say how Groundhog served each call.
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from groundhog.protocol.headers import DECISION, FINGERPRINT
from worldsim import mcp_desk
from worldsim.errors import WorldError
from worldsim.mcp_agent import ToolReply

SESSION_HEADER = "mcp-session-id"
DEFAULT_TIMEOUT = 120.0

OnRead = Callable[[str, ToolReply, bool], None]
"""Called after each read-only tool's answer: (tool, reply, whether this session wrote before)."""


@functools.cache
def verifying_context() -> ssl.SSLContext:
    """The system's trust store in one TLS context, built once per process and shared.

    httpx2 builds a client's context from the CA files at every `AsyncClient(verify=True)`,
    twice with a proxy (its own transport and the proxy's): about 23 ms of CPU each, holding
    the GIL, for every rollout, though the world is usually plain HTTP. A context is safe to
    share between clients and threads; one made for a given `verify` is the caller's to share.
    """
    return httpx2.create_ssl_context()


class ToolCallFailed(WorldError):
    """A tool answered with an error (`isError`); the message names the tool and its text."""


@dataclass(frozen=True)
class Answer:
    """One HTTP answer of the session: the operation it answered and how it was served."""

    method: str
    operation: str
    status: int
    decision: str
    fingerprint: str


def operation_of(request: httpx2.Request) -> str:
    """The JSON-RPC operation of a request (`tools/call <name>` for a tool), or its method."""
    if request.method != "POST":
        return request.method
    try:
        message = json.loads(request.content)
    except ValueError:
        return "?"
    if not isinstance(message, dict):
        return "batch"
    method = str(message.get("method", "?"))
    if method == "tools/call":
        return f"tools/call {message.get('params', {}).get('name', '?')}"
    return method


@dataclass
class McpTools:
    """The agent's tool caller over one MCP session."""

    session: ClientSession
    log: list[Answer]
    on_read: OnRead | None = None
    session_id: str | None = None
    written: bool = False
    reads: list[tuple[str, dict[str, object]]] = field(default_factory=list)

    async def call(self, tool: str, arguments: dict[str, object]) -> ToolReply:
        mark = len(self.log)
        result = await self.session.call_tool(tool, dict(arguments))
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise ToolCallFailed(f"{tool} failed: {text[:500]}")
        answers = [a for a in self.log[mark:] if a.operation == f"tools/call {tool}"]
        last = answers[-1] if answers else None
        reply = ToolReply(
            mcp_desk.decode_answer(text),
            last.decision if last else None,
            last.fingerprint if last else "",
        )
        if tool in mcp_desk.WRITE_TOOLS:
            self.written = True
        else:
            if (tool, arguments) not in self.reads:
                self.reads.append((tool, dict(arguments)))
            if self.on_read is not None:
                self.on_read(tool, reply, self.written)
        return reply


def endpoint(world_url: str, day: int | None) -> str:
    """The world's MCP endpoint for one day (the slow state a group shares)."""
    base = f"{world_url.rstrip('/')}/mcp"
    return base if day is None else f"{base}?day={day}"


@asynccontextmanager
async def open_tools(
    url: str,
    *,
    proxy: str | None = None,
    headers: Mapping[str, str] | None = None,
    on_read: OnRead | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    verify: ssl.SSLContext | bool = True,
) -> AsyncIterator[McpTools]:
    """An initialised MCP session whose tools the agent calls; leaving it ends the session.

    ``verify`` is httpx's: True checks the server against the system's trust store (one
    shared context, `verifying_context`), False checks nothing, or a context of the caller's.
    """
    log: list[Answer] = []
    session_ids: list[str] = []

    async def note(response: httpx2.Response) -> None:
        log.append(
            Answer(
                response.request.method,
                operation_of(response.request),
                response.status_code,
                response.headers.get(DECISION, ""),
                response.headers.get(FINGERPRINT, ""),
            )
        )
        if SESSION_HEADER in response.headers:
            session_ids.append(response.headers[SESSION_HEADER])

    client = httpx2.AsyncClient(
        proxy=proxy,
        headers=dict(headers or {}),
        trust_env=False,
        verify=verifying_context() if verify is True else verify,
        timeout=httpx2.Timeout(timeout, read=timeout),
        event_hooks={"response": [note]},
    )
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()  # its answer names the session (the sandbox)
        await session.list_tools()  # teaches a recording proxy the tools' readOnlyHints
        tools = McpTools(session, log, on_read, session_ids[0] if session_ids else None)
        yield tools
