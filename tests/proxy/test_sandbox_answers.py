"""A served answer takes the asker's own session and JSON-RPC ids."""

from __future__ import annotations

import json

from mitmproxy.test import tutils

from groundhog.protocol.sandbox import minted_session
from proxy.sandbox_answers import (
    answers_every_call,
    make_own,
    names_foreign_session,
)


def jsonrpc_request(message: object, session: str | None = None):
    request = tutils.treq(method=b"POST", content=json.dumps(message).encode())
    request.headers["content-type"] = "application/json"
    if session is not None:
        request.headers["mcp-session-id"] = session
    return request


def response(body: bytes, content_type: str, **headers: str):
    answer = tutils.tresp(content=body)
    answer.headers["content-type"] = content_type
    for name, value in headers.items():
        answer.headers[name.replace("_", "-")] = value
    return answer


def test_ids_in_a_json_body_a_batch_and_every_sse_event_become_the_askers() -> None:
    single = jsonrpc_request({"jsonrpc": "2.0", "id": "mine", "method": "ping"}, "s-b")
    answer = response(
        b'{"jsonrpc":"2.0","id":1,"result":{}}', "application/json", mcp_session_id="[sandbox]"
    )
    make_own(single, answer, "t", "root/b1")
    assert json.loads(answer.content)["id"] == "mine"
    assert answer.headers["mcp-session-id"] == "s-b"
    assert answer.headers["content-length"] == str(len(answer.content))

    batch = jsonrpc_request(
        [{"jsonrpc": "2.0", "id": 8, "method": "a"}, {"jsonrpc": "2.0", "id": 9, "method": "b"}]
    )
    answer = response(b'[{"id":1,"result":1},{"id":2,"result":2}]', "application/json")
    make_own(batch, answer, "t", "root/b1")
    assert [m["id"] for m in json.loads(answer.content)] == [8, 9]

    sse = b'event: message\r\ndata: {"jsonrpc":"2.0","id":4,"result":{}}\r\n\r\n'
    answer = response(sse, "text/event-stream")
    make_own(single, answer, "t", "root/b1")
    assert (
        answer.content
        == b'event: message\r\ndata: {"jsonrpc":"2.0","id":"mine","result":{}}\r\n\r\n'
    )


def test_an_asker_without_a_session_gets_one_minted_for_its_branch_and_occurrence() -> None:
    asker = jsonrpc_request({"jsonrpc": "2.0", "id": 0, "method": "initialize"})
    answer = response(b"{}", "application/json", mcp_session_id="[sandbox]")
    make_own(asker, answer, "t", "replay", occurrence=1)
    assert answer.headers["mcp-session-id"] == minted_session("t", "replay", 1)
    # Another branch, or the same branch's other session, is minted another id.
    assert minted_session("t", "replay", 1) != minted_session("t", "root/b0", 1)
    assert minted_session("t", "replay", 1) != minted_session("t", "replay", 0)


def test_plain_http_answers_are_left_byte_for_byte() -> None:
    request = tutils.treq(method=b"POST", content=b'{"query_text": "x"}')
    answer = response(b'{"id": 1}', "application/json")
    make_own(request, answer, "t", "b")
    assert answer.content == b'{"id": 1}'


def test_completion_and_foreign_sessions() -> None:
    asker = jsonrpc_request({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, "s-a")
    partial = response(b'data: {"id": 3, "result": {}}\n', "text/event-stream")
    assert not answers_every_call(asker, partial, partial.content or b"")
    done = b'data: {"id": 3, "result": {}}\n\n'
    assert answers_every_call(asker, partial, done)
    assert names_foreign_session(asker, response(b"", "application/json", mcp_session_id="s-x"))
    assert names_foreign_session(asker, tutils.tresp(status_code=404))
    assert not names_foreign_session(asker, response(b"", "application/json", mcp_session_id="s-a"))


def test_a_stored_set_cookie_is_not_handed_on_and_a_real_one_is_kept() -> None:
    request = tutils.treq(method=b"GET", content=b"")
    answer = response(b"{}", "application/json")
    answer.headers.add("Set-Cookie", "visit=[redacted:set-cookie:0123456789abcdef]; Path=/")
    answer.headers.add("Set-Cookie", "theme=dark")
    make_own(request, answer, "t", "root/b0")
    assert answer.headers.get_all("set-cookie") == ["theme=dark"]
    assert answer.headers["content-type"] == "application/json"


def test_a_replayed_write_keeps_its_stored_set_cookie() -> None:
    # The asker's own lineage's recorded login: its later requests must carry the cookie.
    request = tutils.treq(method=b"POST", content=b"")
    answer = response(b"{}", "application/json")
    stored = "sid=[redacted:set-cookie:0123456789abcdef]; Path=/"
    answer.headers.add("Set-Cookie", stored)
    make_own(request, answer, "t", "root/b0", replayed_write=True)
    assert answer.headers.get_all("set-cookie") == [stored]


def test_an_issued_placeholder_is_served_as_the_branchs_surrogate() -> None:
    stored = b'{"access_token":"[redacted:issued.40.alnum.ghu_:0123456789abcdef]","n":1}'
    answers = {}
    for branch in ("root/a", "root/b"):
        answer = response(stored, "application/json", content_length=str(len(stored)))
        make_own(tutils.treq(method=b"POST"), answer, "t", branch)
        token = json.loads(answer.content)["access_token"]
        assert len(token) == 40 and token.startswith("ghu_") and "[redacted" not in token
        assert answer.headers["content-length"] == str(len(answer.raw_content))
        answers[branch] = token
    assert answers["root/a"] != answers["root/b"]
    plain = response(b'{"n":1}', "application/json")
    make_own(tutils.treq(method=b"POST"), plain, "t", "root/a")
    assert plain.content == b'{"n":1}'
