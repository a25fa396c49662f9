"""WebSocket conversations through the real proxy, driven by the real `websockets` client.

The world answers every message with a fresh random draw, so a sibling that got its own live
connection would see other numbers: siblings that send the same messages are served the
recorded conversation over a connection that never reaches the world, a sealed fork replays it,
a recording the server closed is closed so, and a sibling whose message differs goes live on
a connection of its own (sealed: is closed with a reason) rather than served a lie.
"""

from __future__ import annotations

import asyncio

import pytest
from mitmproxy.http import Headers
from mitmproxy.test import taddons, tflow, tutils
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from wsproto.utilities import generate_accept_token

from proxy.resolver_client import ResolverClient
from proxy.websocket_played import CLOSE_CLIENT
from proxy.websocket_tape import (
    ConversationPlayer,
    ConversationRecorder,
    WebSocketTape,
    served_upgrade,
)
from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack
from tests.proxy.websocket_world import World


def converse(stack: Stack, world: World, tape: str, branch: str, said: list[str | bytes]):
    """Send each message and collect what the server sent before and after it."""
    heard: list[str | bytes] = []
    with connect(world.url, proxy=proxy_url(stack.proxy.port, tape, branch)) as ws:
        heard.append(ws.recv(timeout=30))
        for message in said:
            ws.send(message)
            heard.append(ws.recv(timeout=30))
            if isinstance(message, str):
                heard.append(ws.recv(timeout=30))
    return heard


SAID: list[str | bytes] = ["search solar", b"\x00\x01binary", "search wind"]


def test_identical_conversations_of_siblings_make_one_live_connection(
    stack: Stack, world: World
) -> None:
    tape = stack.open_tape()
    branches = stack.fork(tape, 3)

    heard = [converse(stack, world, tape, branch, SAID) for branch in branches]

    assert world.connections == 1
    assert heard[0] == heard[1] == heard[2]
    assert str(heard[0][0]).startswith("hello ") and heard[0][3][:8] == b"yranib\x01\x00"
    decisions = []
    for branch in branches:
        events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": branch}).json()
        decisions += [event["decision"] for event in events["events"]]
    assert decisions == ["recorded", "shared", "shared"]

    stack.seal(tape)
    (replay,) = stack.fork(tape, ["replay"])
    assert converse(stack, world, tape, replay, SAID) == heard[0]
    assert world.connections == 1
    assert "has crashed" not in stack.proxy.log()


def test_a_sibling_whose_message_differs_goes_live_after_the_recorded_part(
    stack: Stack, world: World
) -> None:
    tape = stack.open_tape(websocket_replay_client_messages=True)  # the world needs them
    first, second = stack.fork(tape, 2)
    recorded = converse(stack, world, tape, first, SAID)

    heard = converse(stack, world, tape, second, ["search solar", b"other bytes", "search sun"])

    # Served from the tape up to where it left the recording, then the world's own answers.
    assert heard[:3] == recorded[:3]
    assert isinstance(heard[3], bytes) and heard[3][:11] == b"setyb rehto"
    assert str(heard[4]).startswith("search sun: ") and heard[5] == "done"
    # Its own connection, sent its earlier message again (the world's answers to that were
    # not passed on: the client had them from the tape).
    assert world.connections == 2
    assert world.received[1] == ["search solar", b"other bytes", "search sun"]
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": second}).json()
    assert [event["decision"] for event in events["events"]] == ["shared", "passthrough"]
    assert "client message 1 goes live; 1 earlier client messages" in stack.proxy.log()
    proxy_log = stack.proxy.log()
    assert "has crashed" not in proxy_log, proxy_log[proxy_log.find("has crashed") :][:3000]


def test_by_default_the_world_is_sent_only_what_left_the_recording(
    stack: Stack, world: World
) -> None:
    tape = stack.open_tape()  # a replayed message would be a second live call of it
    first, second = stack.fork(tape, 2)
    recorded = converse(stack, world, tape, first, SAID)

    heard = converse(stack, world, tape, second, ["search solar", b"other bytes"])

    assert heard[:3] == recorded[:3] and heard[3][:11] == b"setyb rehto"
    assert world.received[1] == [b"other bytes"]


def test_a_sealed_sibling_whose_message_differs_is_closed_naming_it_and_reaches_no_world(
    stack: Stack, world: World
) -> None:
    tape = stack.open_tape()
    (first,) = stack.fork(tape, 1)
    converse(stack, world, tape, first, SAID)
    stack.seal(tape)
    (second,) = stack.fork(tape, ["sealed-sibling"])

    with pytest.raises(ConnectionClosed) as closed:
        converse(stack, world, tape, second, ["search solar", b"other bytes"])

    assert world.connections == 1
    received = closed.value.rcvd
    assert received is not None and received.code == 1011
    assert received.reason == "groundhog: client message 1 differs from the recording"
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": second}).json()
    assert [event["decision"] for event in events["events"]] == ["shared", "refused"]
    assert "has crashed" not in stack.proxy.log()


def test_a_recording_the_server_closed_is_closed_so_for_a_sibling(
    stack: Stack, world: World
) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    closes = []
    for branch in (first, second):
        with (
            connect(world.url, proxy=proxy_url(stack.proxy.port, tape, branch)) as ws,
            pytest.raises(ConnectionClosed) as closed,
        ):
            greeting = ws.recv(timeout=30)
            ws.send("bye")
            farewell = ws.recv(timeout=30)
            ws.recv(timeout=30)  # the world's close, replayed for the sibling
        received = closed.value.rcvd
        assert received is not None
        closes.append((greeting, farewell, received.code))

    assert world.connections == 1
    assert closes[0] == closes[1] and closes[0][2] == 4001


def test_the_recorder_keeps_order_and_kinds_and_gives_up_past_the_limit() -> None:
    recorder = ConversationRecorder("t-1", limit=10)
    recorder.add(False, True, b"hi")
    recorder.add(True, False, b"\x00\xff")
    player = ConversationPlayer.from_body(recorder.body(1000, True))
    assert player.server_messages() == [(True, b"hi")]
    assert not player.matches(True, b"\x00\xff")  # a text frame is not the binary one
    assert player.matches(False, b"\x00\xff") and player.server_messages() == []
    assert not player.matches(True, b"more")  # past the recording
    recorder.add(True, True, b"x" * 20)
    assert recorder.over_limit and recorder.messages == []


def test_the_player_knows_what_it_played_and_how_the_recording_ended() -> None:
    recorder = ConversationRecorder("t-1", limit=100)
    recorder.add(False, True, b"hello")
    recorder.add(True, True, b"ask")
    recorder.add(False, True, b"answer")
    recorder.add(False, True, b"more")
    player = ConversationPlayer.from_body(recorder.body(4001, False))
    player.server_messages()
    assert player.played_server_messages(before_first_client=True) == 1
    assert player.closed_by_server() is None  # not at the end yet
    assert player.matches(True, b"ask") and len(player.server_messages()) == 2
    assert player.played_client_messages() == [(True, b"ask")]
    assert player.played_server_messages() == 3
    assert player.played_server_messages(before_first_client=True) == 1
    assert player.closed_by_server() == 4001
    by_client = ConversationPlayer.from_body(recorder.body(1000, True))
    by_client.position = len(by_client.messages)
    assert by_client.closed_by_server() is None


def test_a_served_upgrade_carries_the_askers_own_accept_token() -> None:
    body = ConversationRecorder("t", limit=100).body(1000, True)
    recorded = tutils.tresp(status_code=101, content=body)
    recorded.headers["Upgrade"] = "websocket"
    request = tutils.treq(
        headers=Headers(upgrade="websocket", sec_websocket_key="dGhlIHNhbXBsZSBub25jZQ==")
    )
    player = served_upgrade(request, recorded)
    assert player is not None and recorded.content == b""
    assert (
        recorded.headers["Sec-WebSocket-Accept"]
        == generate_accept_token(request.headers["sec-websocket-key"].encode()).decode()
    )
    assert served_upgrade(tutils.treq(), recorded) is None  # not an upgrade: not a conversation


def test_with_an_egress_proxy_a_sibling_that_leaves_the_recording_does_not_go_live() -> None:
    def no_resolver() -> ResolverClient:
        raise AssertionError("the resolver must not be asked to go live")

    tape = WebSocketTape(no_resolver)
    flow = tflow.twebsocketflow()
    player = ConversationPlayer([{"from": "client", "type": "text", "content": "hi"}])

    async def go() -> None:
        with taddons.context(tape) as context:
            context.options.update(mode=["upstream:http://127.0.0.1:9"])
            await tape._go_live(flow, player, True, b"other")

    asyncio.run(go())
    code, reason = flow.metadata[CLOSE_CLIENT]
    assert code == 1011 and reason.endswith("; egress proxy set")


def test_a_websocket_conversation_tape_verifies(stack: Stack, world: World) -> None:
    """Verify replays the recorded upgrade through the proxy's own resolve path: the
    conversation's recording is found at its address and served as recorded."""
    tape = stack.open_tape()
    (branch,) = stack.fork(tape, ["talker"])
    converse(stack, world, tape, branch, SAID)
    result = stack.admin("POST", f"/v1/tapes/{tape}/verify", timeout=300).json()
    assert result["ok"] is True and result["first_mismatch"] is None, result
    assert {b["branch"]: b["matched"] for b in result["branches"]}[branch] == 1
