"""The read-only tools a server declares in its tools/list answer, JSON or SSE."""

from __future__ import annotations

import json

from engine.mcp_tools import is_tools_list, read_only_tools, tools_key_hash

TOOLS = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "tools": [
            {"name": "search", "annotations": {"readOnlyHint": True}},
            {"name": "write_note", "annotations": {"readOnlyHint": False}},
            {"name": "fetch"},
        ]
    },
}


def test_read_only_tools_from_a_json_or_an_sse_answer() -> None:
    body = json.dumps(TOOLS).encode()
    assert read_only_tools(body, "application/json", None) == ["search"]
    sse = b"event: message\r\ndata: " + body + b"\r\n\r\n"
    assert read_only_tools(sse, "text/event-stream", None) == ["search"]
    assert read_only_tools(b"data: {broken\n\n", "text/event-stream", None) == []


def test_the_endpoint_key_ignores_the_query_and_the_list_is_named_in_its_key() -> None:
    assert tools_key_hash("http://t.example/mcp?x=1") == tools_key_hash("http://t.example/mcp")
    assert tools_key_hash("http://t.example/mcp") != tools_key_hash("http://u.example/mcp")
    assert is_tools_list('v3 POST http://t.example/mcp op:mcp tools/list body:{"method":"x"}')
    assert not is_tools_list("v3 POST http://t.example/mcp op:mcp tools/call search")
