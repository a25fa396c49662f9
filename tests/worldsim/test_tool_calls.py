"""worldsim/tool_calls.py: a read sent as a tool call is answered exactly as the GET."""

from __future__ import annotations

import json

import pytest

from worldsim.agent import Reply
from worldsim.errors import InvalidRequest
from worldsim.tool_calls import PostTools, is_tool_call
from worldsim.world import World, WorldRequest

BRANCH = {"branch": "root/a", "seed": "7"}


@pytest.mark.parametrize("kind", ["research", "shop"])
def test_a_tool_call_answers_the_same_bytes_and_request_id_as_its_get(kind: str) -> None:
    path, query = ("/search", (("q", "solar"),)) if kind == "research" else ("/catalog", ())
    as_get = World(3, kind=kind).handle(WorldRequest("GET", path, query, **BRANCH))
    body = json.dumps(dict(query)).encode()
    as_post = World(3, kind=kind).handle(WorldRequest("POST", f"/tools{path}", (), body, **BRANCH))
    assert (as_post.status, as_post.body, as_post.request_id) == (
        as_get.status,
        as_get.body,
        as_get.request_id,
    )


def test_a_tool_calls_body_must_be_a_json_object() -> None:
    with pytest.raises(InvalidRequest):
        World(3).handle(WorldRequest("POST", "/tools/search", (), b"[1]", **BRANCH))
    assert is_tool_call("POST", "/tools/search") and not is_tool_call("POST", "/docs")
    assert not is_tool_call("GET", "/tools/search")


def test_the_transport_sends_reads_as_tool_calls_and_writes_as_they_are() -> None:
    sent: list[tuple] = []

    class Recorder:
        def send(self, method, path, params, body, headers=None) -> Reply:
            sent.append((method, path, tuple(params), body))
            return Reply(200, {}, b"{}")

    transport = PostTools(Recorder())
    transport.send("GET", "/search", [("q", "x")], None)
    transport.send("POST", "/docs", (), b'{"id":"b"}')
    assert sent == [
        ("POST", "/tools/search", (), b'{"q":"x"}'),
        ("POST", "/docs", (), b'{"id":"b"}'),
    ]
