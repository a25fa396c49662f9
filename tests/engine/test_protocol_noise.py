"""Protocol noise leaves the key; what the world answers by stays in it."""

from __future__ import annotations

import json

from engine.keys import request_key
from engine.operations import Profile
from engine.protocol_noise import NOISE, noise_for, user_agent_product, without_noise
from engine.protocol_profiles import detect_operation
from engine.request import RequestParts


def _key(body: dict, headers: tuple[tuple[str, str], ...] = (), match: tuple[str, ...] = ()):
    request = RequestParts(
        "POST", "https", "mcp.example", 443, "/mcp",
        headers=(("content-type", "application/json"), *headers), body=json.dumps(body).encode(),
    )  # fmt: skip
    return request_key(request, operation=detect_operation(request), match_headers=match)


INITIALIZE = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "mcp", "version": "2.3.0"}},
}  # fmt: skip


def test_client_info_meta_and_ids_leave_an_mcp_key() -> None:
    older = {**INITIALIZE, "id": 5, "params": {**INITIALIZE["params"], "_meta": {"x": 1}}}
    older["params"]["clientInfo"] = {"name": "mcp", "version": "2.0.0"}
    assert _key(INITIALIZE) == _key(older)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "solar"}}}  # fmt: skip
    with_meta = {**call, "params": {**call["params"], "_meta": {"progressToken": 3}}}
    assert _key(call) == _key(with_meta)
    other = {**call, "params": {**call["params"], "arguments": {"query": "lunar"}}}
    assert _key(call) != _key(other)
    # What the server answers by stays: another protocol version is another request.
    newer_protocol = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "x"}}
    assert _key(INITIALIZE) != _key(newer_protocol)


def test_client_info_is_noise_only_where_declared_and_the_input_is_kept() -> None:
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"clientInfo": 1, "_meta": 2}}
    assert without_noise(call, Profile.MCP) == {"jsonrpc": "2.0", "method": "tools/call",
                                                "params": {"clientInfo": 1}}  # fmt: skip
    assert call["params"] == {"clientInfo": 1, "_meta": 2}
    assert {field.path for field in noise_for(Profile.JSONRPC)} == {("id",)}
    assert all(field.reason for field in NOISE)


def test_accept_encoding_is_not_keyed_and_a_keyed_user_agent_loses_its_version() -> None:
    plain = ({"jsonrpc": "2.0", "id": 1, "method": "ping"},)
    gzip = _key(*plain, headers=(("accept-encoding", "gzip, deflate"),))
    assert gzip == _key(*plain, headers=(("accept-encoding", "identity"),))
    assert "accept-encoding" not in gzip.readable
    one = _key(*plain, headers=(("user-agent", "python-httpx/0.28.1"),), match=("user-agent",))
    two = _key(*plain, headers=(("user-agent", "python-httpx/0.27.0"),), match=("user-agent",))
    three = _key(*plain, headers=(("user-agent", "curl/8.5.0"),), match=("user-agent",))
    assert one == two != three
    assert user_agent_product("Mozilla/5.0 (X11; Linux) Gecko/2010 Firefox/120.0") == (
        "Mozilla Gecko Firefox"
    )


def test_accept_any_media_type_is_keyed_as_no_accept() -> None:
    plain = ({"jsonrpc": "2.0", "id": 1, "method": "ping"},)
    assert _key(*plain, headers=(("accept", "*/*"),)) == _key(*plain)
    assert _key(*plain, headers=(("accept", "text/plain"),)) != _key(*plain)
