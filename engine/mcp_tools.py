"""Which MCP tools a server declared read-only, learned from its recorded `tools/list` answer.

An MCP `tools/call` is a shared read exactly when the server said the tool only reads
(`annotations.readOnlyHint: true`); otherwise each branch's call must reach its own sandbox.
The tape's `mcp_tools` overrides a tool either way. The server's declaration is kept as a key
hint (store/hints.py) under a key of its own per endpoint (`mcp-tools <url without query>`),
written when the first `tools/list` answer of that endpoint is recorded; until then every
`tools/call` of the endpoint is a write (the safe side). Without this, a tape would have to
list every read-only tool by hand or share nothing of an agent's tool traffic.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from engine.content_coding import decode_content

TOOLS_LIST_MARK = " op:mcp tools/list"
_SSE_DATA = "data:"


def tools_key_hash(url: str) -> str:
    """The hint key that holds an endpoint's read-only tools (`url`: the request's URL)."""
    endpoint = url.split("?", 1)[0]
    return hashlib.sha256(f"mcp-tools {endpoint}".encode()).hexdigest()


def is_tools_list(key_readable: str) -> bool:
    """Whether a stored request key is an MCP `tools/list` (the key names its operation)."""
    return TOOLS_LIST_MARK in key_readable


def json_messages(body: bytes, content_type: str | None, encoding: str | None) -> list[Any]:
    """The JSON-RPC messages of an answer: a JSON body (a batch: each), or each SSE event's
    JSON data (the streamable HTTP transport answers either way)."""
    decoded = decode_content(body, encoding)
    if not decoded:
        return []
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        return []
    chunks = sse_data(text) if "event-stream" in (content_type or "").lower() else [text]
    messages: list[Any] = []
    for chunk in chunks:
        try:
            value = json.loads(chunk)
        except ValueError:
            continue
        messages.extend(value if isinstance(value, list) else [value])
    return messages


def sse_data(text: str) -> list[str]:
    """The data of each event of an SSE stream (multi-line data joined by newlines)."""
    events, lines = [], []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith(_SSE_DATA):
            lines.append(line[len(_SSE_DATA) :].removeprefix(" "))
        elif line == "" and lines:
            events.append("\n".join(lines))
            lines = []
    if lines:
        events.append("\n".join(lines))
    return events


def read_only_tools(body: bytes, content_type: str | None, encoding: str | None) -> list[str]:
    """The tools a `tools/list` answer declares `readOnlyHint: true`, sorted."""
    names: set[str] = set()
    for message in json_messages(body, content_type, encoding):
        result = message.get("result") if isinstance(message, dict) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        for tool in tools if isinstance(tools, list) else []:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            annotations = tool.get("annotations")
            if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
                names.add(tool["name"])
    return sorted(names)


def hint_value(names: list[str]) -> str:
    """How a hint row keeps the names (its `reads` column): comma-separated."""
    return ",".join(names)


def names_of(value: str | None) -> frozenset[str]:
    return frozenset(name for name in (value or "").split(",") if name)
