"""Unit tests of the four dependency models."""

from __future__ import annotations

import json

from engine.dependencies import (
    classify,
    match_rule,
    recorded_writes,
    response_hints,
    session_resource,
)
from engine.operations import Call, Operation, Profile
from engine.policy import DependencyModel
from engine.protocol_profiles import detect_operation
from engine.request import RequestParts


def request(method: str = "GET", path: str = "/docs/1", **changes: object) -> RequestParts:
    return RequestParts(method, "https", "Api.Example.com", 443, path).with_changes(**changes)


# What `closure` reads of api.example.com: its origin, and the per-host name tapes recorded
# before resources were per origin wrote (read, never written: see legacy_host_resource).
CLOSURE_READS = {"origin:https://api.example.com", "host:api.example.com"}


def test_closure_names_the_origin() -> None:
    read = classify(request(), DependencyModel.CLOSURE)
    assert not read.is_write and read.reads == CLOSURE_READS and not read.writes
    write = classify(request("DELETE"), DependencyModel.CLOSURE)
    assert write.is_write and write.writes == {"origin:https://api.example.com"}


def test_closure_is_per_origin_scheme_host_and_port() -> None:
    """Two tool servers on one machine: one host, two origins; a write to one leaves the other."""
    tool = request("POST", scheme="http", host="127.0.0.1", port=8101)
    other_port = request(scheme="http", host="127.0.0.1", port=8102)
    other_scheme = request(scheme="https", host="127.0.0.1", port=8101)
    written = classify(tool, DependencyModel.CLOSURE).writes
    assert written == {"origin:http://127.0.0.1:8101"}
    for read in (other_port, other_scheme):
        assert not written & classify(read, DependencyModel.CLOSURE).reads, read
    same_origin = request(scheme="HTTP", host="127.0.0.1", port=8101, path="/other")
    assert written < classify(same_origin, DependencyModel.CLOSURE).reads
    default_port = request(scheme="http", host="h.test", port=80)
    assert "origin:http://h.test" in classify(default_port, DependencyModel.CLOSURE).reads


def test_reads_still_depend_on_the_per_host_names_older_tapes_wrote() -> None:
    """A branch that wrote `host:…` before the upgrade must not be served the base recording."""
    read = classify(request(port=8443), DependencyModel.CLOSURE)
    assert "host:api.example.com" in read.reads
    assert "host:api.example.com" not in classify(request("POST"), DependencyModel.CLOSURE).writes
    path_read = classify(request(), DependencyModel.PATH)
    assert "path:api.example.com/docs/1" in path_read.reads


def test_path_names_origin_and_path() -> None:
    read = classify(request(), DependencyModel.PATH)
    assert read.reads == {"path:https://api.example.com/docs/1", "path:api.example.com/docs/1"}
    written = classify(request("PUT"), DependencyModel.PATH).writes
    assert written == {"path:https://api.example.com/docs/1"}
    elsewhere = classify(request(scheme="http", port=8080), DependencyModel.PATH).reads
    assert "path:http://api.example.com:8080/docs/1" in elsewhere


RULES = [
    {
        "method": "POST",
        "path": "/docs/{id}",
        "reads": ["doc:{id}"],
        "writes": ["doc:{id}", "index:{body.meta.topic}"],
    },
    {"method": "GET", "host": "other.com", "path": "/docs/{id}", "reads": ["x"], "writes": []},
    {"method": "GET", "path": "/search", "reads": ["index:{query.topic}"], "writes": []},
    {"method": "POST", "path": "/search", "reads": ["index:{body.topic}"], "writes": []},
]


def test_rules_fill_placeholders_from_path_query_and_body() -> None:
    body = json.dumps({"meta": {"topic": "solar"}}).encode()
    write = classify(request("POST", "/docs/42", body=body), DependencyModel.RULES, rules=RULES)
    assert write.is_write
    assert write.writes == {"doc:42", "index:solar", "origin:https://api.example.com"}
    search = classify(
        request(path="/search", query=(("topic", "wind"),)), DependencyModel.RULES, rules=RULES
    )
    assert search.reads == {"index:wind"}


def test_a_rules_session_placeholder_names_the_session_label_and_a_path_value_wins() -> None:
    rules = [
        {"method": "POST", "path": "/notes", "writes": ["notes:{session}"]},
        {"method": "GET", "path": "/notes", "reads": ["notes:{session}"]},
        {"method": "GET", "path": "/rooms/{session}", "reads": ["room:{session}"]},
    ]
    write = classify(
        request("POST", "/notes"), DependencyModel.RULES, rules=rules, session_label="s-1"
    )
    assert write.writes == {"notes:s-1", "origin:https://api.example.com"}
    read = classify(request(path="/notes"), DependencyModel.RULES, rules=rules, session_label="s-2")
    assert read.reads == {"notes:s-2"}
    outside = classify(request(path="/notes"), DependencyModel.RULES, rules=rules)
    assert outside.reads == {"notes:"}  # no session: the placeholder names nothing
    room = classify(
        request(path="/rooms/blue"), DependencyModel.RULES, rules=rules, session_label="s-1"
    )
    assert room.reads == {"room:blue"}


def test_rules_can_make_a_post_a_read_and_unmatched_fall_back_to_closure() -> None:
    post_read = classify(
        request("POST", "/search", body=b'{"topic":"t"}'), DependencyModel.RULES, rules=RULES
    )
    assert not post_read.is_write and post_read.reads == {"index:t"}
    unmatched = classify(request(path="/docs/1"), DependencyModel.RULES, rules=RULES)
    assert unmatched.reads == CLOSURE_READS  # the host-specific rule is for other.com
    assert match_rule(request(host="other.com"), RULES) is not None


def test_rules_tolerate_bad_bodies() -> None:
    write = classify(request("POST", "/docs/1", body=b"\xff"), DependencyModel.RULES, rules=RULES)
    assert write.writes == {"doc:1", "index:", "origin:https://api.example.com"}


def test_hints_use_recorded_reads_and_fall_back_to_closure() -> None:
    hinted = classify(request(), DependencyModel.HINTS, hinted_reads="doc:1, doc:2")
    assert hinted.reads == {"doc:1", "doc:2"}
    assert classify(request(), DependencyModel.HINTS).reads == CLOSURE_READS
    # Hinted-empty ("reads no state") is not "never hinted": it reads nothing.
    assert classify(request(), DependencyModel.HINTS, hinted_reads="").reads == frozenset()


def test_write_resources_come_from_the_response_for_hints() -> None:
    write = classify(request("POST"), DependencyModel.HINTS)
    headers = [["X-Groundhog-Writes", "doc:1,doc:9"]]
    assert recorded_writes(request("POST"), DependencyModel.HINTS, write, headers) == {
        "doc:1",
        "doc:9",
        "origin:https://api.example.com",
    }
    closure = classify(request("POST"), DependencyModel.CLOSURE)
    assert (
        recorded_writes(request("POST"), DependencyModel.CLOSURE, closure, headers)
        == closure.writes
    )
    assert response_hints([["x-groundhog-reads", "b, a"]]) == ("a,b", "")
    assert response_hints([["Content-Type", "x"]]) is None
    assert response_hints([["X-Groundhog-Reads", ""]]) == ("", "")
    assert response_hints([["X-Groundhog-Writes", "doc:1"]]) == (None, "doc:1")


def _mcp_post(body: bytes) -> RequestParts:
    json_type = (("content-type", "application/json"),)
    return RequestParts("POST", "http", "tools.example", 80, "/mcp", headers=json_type, body=body)


def _mcp_call(tool: str, note: str = "") -> RequestParts:
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"note": note}},
    }
    return _mcp_post(json.dumps(body).encode())


def test_operations_decide_read_or_write_and_rules_match_them() -> None:
    search, write = _mcp_call("search"), _mcp_call("write_note", "n1")
    op_search, op_write = detect_operation(search), detect_operation(write)
    closure = DependencyModel.CLOSURE
    assert classify(search, closure, operation=op_search).is_write
    read = classify(search, closure, operation=op_search, read_only_tools=frozenset({"search"}))
    assert not read.is_write
    assert read.reads == {"origin:http://tools.example", "host:tools.example"}
    rules = [
        {"operation": "tools/call write_*", "writes": ["notes:{body.params.arguments.note}"]},
        {"operation": "tools/call read_notes", "reads": ["notes:n1"]},
    ]
    written = classify(write, DependencyModel.RULES, rules=rules, operation=op_write)
    assert written.is_write and written.writes == {"notes:n1", "origin:http://tools.example"}
    # A rule naming an operation never matches a request no profile read.
    plain = RequestParts("POST", "http", "tools.example", 80, "/mcp")
    assert classify(plain, DependencyModel.RULES, rules=rules).writes == {
        "origin:http://tools.example"
    }


def test_a_session_operation_is_live_but_writes_no_shared_resource() -> None:
    initialize = Operation(Profile.MCP, "initialize", calls=(Call("initialize"),))
    request = _mcp_call("x")
    found = classify(request, DependencyModel.CLOSURE, operation=initialize)
    assert found.is_write and found.reads == frozenset()
    assert found.writes == {session_resource(request)} != {"origin:http://tools.example"}
    # Its address is its key and occurrence alone: what other session operations still in
    # flight left unknown cannot move it (a sealed replay meets it whatever the timing was).
    assert found.session and found.own_resources == frozenset()
    call = classify(request, DependencyModel.CLOSURE, operation=detect_operation(request))
    assert not call.session and call.own_resources == call.reads | call.writes


def test_an_unreadable_jsonrpc_body_is_an_opaque_write_whatever_the_rules_say() -> None:
    broken = _mcp_post(b'{"jsonrpc": "2.0", "method": "tools/list"')
    operation = detect_operation(broken)
    assert operation is not None and operation.failed
    rules = [{"operation": "*", "reads": ["everything"]}]
    found = classify(broken, DependencyModel.RULES, rules=rules, operation=operation)
    assert found.is_write
    assert classify(broken, DependencyModel.CLOSURE, operation=operation).is_write
