"""Protocol profiles find the operation in the body; plain HTTP is left alone."""

from __future__ import annotations

import gzip
import json

import pytest

from engine.operations import Profile
from engine.protocol_profiles import detect_operation, graphql_operation, pinned_profile
from engine.request import RequestParts
from engine.tape_settings import TapeSettings


def post(body: object | bytes, *, headers: tuple[tuple[str, str], ...] = ()) -> RequestParts:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return RequestParts(
        method="POST",
        scheme="https",
        host="tools.example",
        port=443,
        path="/mcp",
        headers=(("content-type", "application/json"), *headers),
        body=raw,
    )


def test_mcp_tools_call_names_the_tool_and_drops_the_id_from_the_keyed_body() -> None:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search"}}
    operation = detect_operation(post(call))
    assert operation is not None
    assert operation.profile is Profile.MCP
    assert operation.name == "tools/call search"
    assert operation.keyed_body is not None and '"id"' not in operation.keyed_body
    other = detect_operation(post({**call, "id": "x-99"}))
    assert other is not None and other.keyed_body == operation.keyed_body


def test_a_batch_is_one_operation_of_its_calls_and_notifications_have_no_id() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "getBalance", "params": ["a"]},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    operation = detect_operation(post(batch))
    assert operation is not None
    assert operation.profile is Profile.JSONRPC  # getBalance is no MCP method
    assert operation.name == "batch[getBalance,notifications/initialized]"
    assert [call.is_notification for call in operation.calls] == [False, True]


def test_gzip_bodies_are_decoded() -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    request = post(
        gzip.compress(json.dumps(call).encode()), headers=(("content-encoding", "gzip"),)
    )
    # The first byte of a gzip body is not `{`: only a pin reads it.
    assert detect_operation(request) is None
    operation = detect_operation(request, "mcp")
    assert operation is not None and operation.name == "ping"


@pytest.mark.parametrize(
    ("body", "failed"),
    [
        (b'{"jsonrpc": "2.0", "method": ', "body is not JSON"),
        (b'{"jsonrpc": "2.0", "id": 1}', "a call without a method"),
        (b"[]", "empty batch"),
    ],
)
def test_an_unreadable_jsonrpc_body_is_a_failed_operation(body: bytes, failed: str) -> None:
    operation = detect_operation(post(body), "jsonrpc" if body == b"[]" else None)
    assert operation is not None and operation.failed == failed
    assert operation.label.startswith("jsonrpc! ")


def test_plain_http_is_not_parsed() -> None:
    assert detect_operation(post({"query_text": "x"})) is None
    # A REST search's `query` field is no GraphQL operation.
    assert detect_operation(post({"query": "solar panels"})) is None
    assert detect_operation(post(b"not json at all")) is None
    get = RequestParts("GET", "https", "tools.example", 443, "/mcp")
    assert detect_operation(get) is None
    # A GET or DELETE of an MCP session (it carried Mcp-Session-Id) is the session's own.
    session = detect_operation(get, in_session=True)
    assert session is not None and session.name == "GET session"


def test_grpc_by_content_type_and_graphql_by_body() -> None:
    grpc = RequestParts(
        "POST",
        "https",
        "g.example",
        443,
        "/pkg.Users/Get",
        headers=(("content-type", "application/grpc+proto"),),
        body=b"\x00\x00\x00\x00\x02\x08\x01",
    )
    operation = detect_operation(grpc)
    assert operation is not None and operation.profile is Profile.GRPC
    assert operation.name == "/pkg.Users/Get"
    query = detect_operation(post({"query": "query Me { me { id } }"}))
    assert query is not None and query.name == "query Me" and query.graphql_type == "query"
    mutation = detect_operation(
        post({"query": "query A { a } mutation B { b }", "operationName": "B"})
    )
    assert mutation is not None and mutation.graphql_type == "mutation"


def test_graphql_shapes() -> None:
    assert graphql_operation("{ me { id } }", None) == ("query", "")
    assert graphql_operation('# mutation X\nquery Q { a(s: "mutation M") }', None) == ("query", "Q")
    assert graphql_operation("fragment F on T { a }", None) == (None, "")
    # A pinned GraphQL host with a body that is no GraphQL request fails, visibly.
    failed = detect_operation(post({"jsonless": 1}), "graphql")
    assert failed is not None and failed.failed == "not a GraphQL request"


def test_pins_per_host_switch_profiles_off() -> None:
    config = TapeSettings.model_validate({"protocols": {"tools.example": "off", "*": "mcp"}})
    assert pinned_profile(config, "tools.example") == "off"
    assert pinned_profile(config, "other.example") == "mcp"
    assert pinned_profile(TapeSettings(), "tools.example") is None
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert detect_operation(post(call), "off") is None
