"""Read, write or session per operation: MCP defaults and the tape's per-tool overrides."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.operations import Call, Kind, Operation, Profile, operation_kind
from engine.protocol_profiles import detect_operation
from engine.request import RequestParts


def mcp(*calls: Call) -> Operation:
    return Operation(Profile.MCP, "x", calls=calls)


@pytest.mark.parametrize(
    "method",
    [
        "tools/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "prompts/list",
        "prompts/get",
        "ping",
        "completion/complete",
    ],
)
def test_mcp_list_read_get_and_ping_are_reads(method: str) -> None:
    assert operation_kind(mcp(Call(method))) is Kind.READ


def test_initialize_and_notifications_are_session_operations() -> None:
    assert operation_kind(mcp(Call("initialize"))) is Kind.SESSION
    note = Call("notifications/initialized", is_notification=True)
    assert operation_kind(mcp(note)) is Kind.SESSION
    assert operation_kind(mcp(Call("tools/list"), note)) is Kind.SESSION


def test_a_sessions_get_stream_and_delete_are_session_operations() -> None:
    # Not writes: they must bump no resource a read depends on (a replayed GET stream did).
    get = RequestParts("GET", "https", "tools.example", 443, "/mcp")
    for request in (get, replace(get, method="DELETE")):
        operation = detect_operation(request, in_session=True)
        assert operation is not None
        assert operation_kind(operation) is Kind.SESSION


def test_a_tool_call_reads_exactly_when_declared_read_only_or_pinned() -> None:
    search = mcp(Call("tools/call", "search"))
    assert operation_kind(search) is Kind.WRITE
    assert operation_kind(search, read_only_tools={"search"}) is Kind.READ
    assert operation_kind(search, read_only_tools={"search"}, tool_kinds={"search": "write"}) is (
        Kind.WRITE
    )
    assert operation_kind(search, tool_kinds={"search": "read"}) is Kind.READ
    mixed = mcp(Call("tools/call", "search"), Call("tools/call", "write_note"))
    assert operation_kind(mixed, read_only_tools={"search"}) is Kind.WRITE


def test_other_profiles() -> None:
    assert operation_kind(Operation(Profile.JSONRPC, "m", calls=(Call("getBalance"),))) is (
        Kind.WRITE
    )
    assert operation_kind(Operation(Profile.GRAPHQL, "query Q", graphql_type="query")) is (
        Kind.READ
    )
    assert operation_kind(Operation(Profile.GRAPHQL, "mutation M", graphql_type="mutation")) is (
        Kind.WRITE
    )
    assert operation_kind(Operation(Profile.GRPC, "/a.B/C")) is Kind.WRITE
    assert operation_kind(Operation(Profile.MCP, "", failed="body is not JSON")) is Kind.WRITE
    assert operation_kind(Operation(Profile.HTTP, "GET /")) is Kind.BY_METHOD
