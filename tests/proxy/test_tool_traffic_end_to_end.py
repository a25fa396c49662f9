"""Tool traffic of agents through the real proxy: write answers, JSON-RPC ids, sessions.

A write is answered by the branch's own sandbox (its own `Set-Cookie`), a shared JSON-RPC
answer carries the asker's own ids and session, and an answer for a session the asker does
not hold is never recorded for its siblings.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import httpx
import openai
from openai.types.chat import ChatCompletionMessageParam

from tests.proxy.stack import Stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream


def rpc(stack: Stack, tape: str, branch: str, url: str, message: object, session: str = ""):
    headers = {"Content-Type": "application/json"}
    if session:
        headers["Mcp-Session-Id"] = session
    return ask(stack, tape, branch, url, "POST", json.dumps(message).encode(), headers)


def test_each_sibling_that_logs_in_gets_its_own_session_cookie(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    branches = stack.fork(tape, 4)
    url = f"{upstream.url}/login"

    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(lambda b: ask(stack, tape, b, url, method="POST"), branches))

    assert upstream.state.count("/login") == 4
    assert {reply.decision for reply in replies} == {"write"}
    sids = {reply.json()["sid"] for reply in replies}
    assert len(sids) == 4
    for reply in replies:
        assert reply.headers["set-cookie"] == f"sid={reply.json()['sid']}"
    for branch in branches:  # the tape keeps a keyed placeholder, never a branch's cookie
        (cookie,) = [
            value
            for name, value in stored_headers(stack, tape, branch)[0]
            if name.lower() == "set-cookie"
        ]
        assert cookie.startswith("sid=[redacted:set-cookie:")
        assert not any(sid in cookie for sid in sids)


def test_a_sealed_tape_replays_each_lineage_its_own_write_answer(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    siblings = stack.fork(tape, 4)
    # Each sibling forks a replayer before it logs in: the replayer's lineage is that sibling.
    replayers = [stack.fork(tape, ["again"], parent=sibling)[0] for sibling in siblings]
    url = f"{upstream.url}/login"
    with ThreadPoolExecutor(max_workers=4) as pool:
        live = list(pool.map(lambda b: ask(stack, tape, b, url, method="POST"), siblings))
    stack.seal(tape)
    (newcomer,) = stack.fork(tape, ["newcomer"])

    replayed = [ask(stack, tape, branch, url, method="POST") for branch in replayers]
    first_recording = ask(stack, tape, newcomer, url, method="POST")

    assert upstream.state.count("/login") == 4  # the sealed tape made no live call
    assert {reply.decision for reply in [*replayed, first_recording]} == {"replayed-write"}
    # Each lineage is served its own sibling's session, not the first recorder's.
    assert [reply.body for reply in replayed] == [reply.body for reply in live]
    assert len({reply.body for reply in replayed}) == 4
    cookies = [reply.headers["set-cookie"] for reply in replayed]
    assert len(set(cookies)) == 4
    assert all(cookie.startswith("sid=[redacted:set-cookie:") for cookie in cookies)
    # A fork whose lineage never wrote is served the address's first recording.
    assert first_recording.body in {reply.body for reply in live}


def stored_headers(stack: Stack, tape: str, branch: str) -> list[list[list[str]]]:
    """The stored response headers of each exchange the branch was served, in order."""
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": branch}).json()
    return [
        stack.admin("GET", f"/v1/tapes/{tape}/exchanges/{event['exchange_id']}").json()["response"][
            "headers"
        ]
        for event in events["events"]
    ]


def test_a_shared_read_hands_no_branch_the_recorders_cookie(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    recorder, sibling = stack.fork(tape, 2)
    url = f"{upstream.url}/visit"

    first = ask(stack, tape, recorder, url)
    second = ask(stack, tape, sibling, url)
    stack.seal(tape)
    (replayer,) = stack.fork(tape, ["replay"])
    replayed = ask(stack, tape, replayer, url)

    assert upstream.state.count("/visit") == 1
    assert [first.decision, second.decision, replayed.decision] == ["recorded", "shared", "shared"]
    assert first.body == second.body == replayed.body == b'{"visit": 1}'
    # Same address, same bytes for every reader, the recorder included: none gets a cookie.
    assert all("set-cookie" not in reply.headers for reply in (first, second, replayed))
    (headers,) = stored_headers(stack, tape, recorder)
    (cookie,) = [value for name, value in headers if name.lower() == "set-cookie"]
    assert cookie.startswith("visit=[redacted:set-cookie:") and "v-1" not in cookie
    assert cookie.endswith("; Path=/; HttpOnly")


def test_a_shared_jsonrpc_answer_carries_the_askers_own_ids_and_session(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    url = f"{upstream.url}/rpc"
    ping = {"jsonrpc": "2.0", "method": "ping"}
    batch = [{"jsonrpc": "2.0", "method": "ping"}, {"jsonrpc": "2.0", "method": "tools/list"}]

    mine = rpc(stack, tape, first, url, {**ping, "id": 1}, session="session-a")
    theirs = rpc(stack, tape, second, url, {**ping, "id": "b-7"}, session="session-b")
    mine_batch = rpc(stack, tape, first, url, [{**batch[0], "id": 5}, {**batch[1], "id": 6}])
    theirs_batch = rpc(stack, tape, second, url, [{**batch[0], "id": 8}, {**batch[1], "id": 9}])

    assert [mine.decision, theirs.decision] == [
        "recorded",
        "shared",
    ]
    assert upstream.state.count("/rpc") == 2
    assert mine.json()["id"] == 1 and theirs.json()["id"] == "b-7"
    assert theirs.json()["result"] == mine.json()["result"]
    assert mine.headers["mcp-session-id"] == "session-a"
    assert theirs.headers["mcp-session-id"] == "session-b"
    assert [m["id"] for m in mine_batch.json()] == [5, 6]
    assert [m["id"] for m in theirs_batch.json()] == [8, 9]
    assert theirs_batch.decision == "shared"
    # The session never reached the tape in clear.
    exchanges = stack.admin("GET", f"/v1/tapes/{tape}/events").json()
    assert "session-a" not in json.dumps(exchanges)


def test_an_answer_for_a_session_the_asker_does_not_hold_is_not_shared(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    ended, alive = stack.fork(tape, 2)
    url = f"{upstream.url}/rpc"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    gone = rpc(stack, tape, ended, url, ping, session="gone")
    fine = rpc(stack, tape, alive, url, ping, session="session-b")

    assert gone.status == 404
    assert gone.decision == "passthrough"
    assert fine.status == 200 and fine.decision == "recorded"
    assert upstream.state.count("/rpc") == 2


def completions(stack: Stack, tape: str, base_url: str, stream: bool, branch: str) -> str:
    proxy = f"http://127.0.0.1:{stack.proxy.port}"
    headers = {"X-Groundhog-Tape": tape, "X-Groundhog-Branch": branch}
    with httpx.Client(proxy=proxy, headers=headers, trust_env=False, timeout=60) as http:
        client = openai.OpenAI(
            base_url=base_url, api_key="sk-test-0123456789abcdef", http_client=http
        )
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
        if not stream:
            answer = client.chat.completions.create(model="m", messages=messages)
            return answer.choices[0].message.content or ""
        chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
        return "".join(chunk.choices[0].delta.content or "" for chunk in chunks)


def test_the_openai_sdk_streamed_and_not_shares_a_tool_endpoint_a_rule_reads(
    stack: Stack, upstream: Upstream
) -> None:
    rule = {"method": "POST", "path": "/v1/chat/completions", "reads": ["llm"]}
    tape = stack.open_tape(dependency_model="rules", rules=[rule])
    branches = stack.fork(tape, 3)
    base_url = f"{upstream.url}/v1"

    for stream in (False, True):
        with ThreadPoolExecutor(max_workers=3) as pool:
            texts = list(pool.map(partial(completions, stack, tape, base_url, stream), branches))
        assert len(set(texts)) == 1 and texts[0].startswith("answer ")

    # One world call per shape (the SDK's per-client headers and its API key kept it shared).
    assert upstream.state.count("/v1/chat/completions") == 2


def test_a_graphql_query_is_shared_and_a_mutation_is_each_siblings_own_write(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()  # the defaults: the GraphQL profile is detected from the body
    first, second = stack.fork(tape, 2)
    url = f"{upstream.url}/graphql"
    headers = {"Content-Type": "application/json"}
    query = json.dumps({"query": 'query Rankings { search(q: "solar") { id } }'}).encode()
    mutation = json.dumps({"query": "mutation Save { save(id: 1) { ok } }"}).encode()

    asked = [ask(stack, tape, branch, url, "POST", query, headers) for branch in (first, second)]
    wrote = [ask(stack, tape, branch, url, "POST", mutation, headers) for branch in (first, second)]

    # The query: one call to the world, its bytes for both; the mutation: each sibling's own.
    assert [reply.decision for reply in asked] == ["recorded", "shared"]
    assert asked[0].body == asked[1].body
    assert [reply.decision for reply in wrote] == ["write", "write"]
    assert wrote[0].json()["number"] != wrote[1].json()["number"]
    assert upstream.state.count("/graphql") == 3
    protocols = stack.admin("GET", f"/v1/tapes/{tape}/report").json()["protocols"]
    # Counted per stored exchange: the query's address and the mutation's.
    assert protocols["hosts"]["127.0.0.1"]["fired"]["graphql"] == 2
