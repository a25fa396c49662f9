"""WebSocket conversations through the real proxy, driven by the real `websockets` client.

The world answers every message with a fresh random draw, so a sibling that got its own live
connection would see other numbers: siblings that send the same messages are served the
recorded conversation over a connection that never reaches the world, a sealed fork replays it,
and a sibling whose message differs is closed with a reason rather than served a lie.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import pytest
from mitmproxy.http import Headers
from mitmproxy.test import tutils
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.sync.server import Server, ServerConnection, serve
from wsproto.utilities import generate_accept_token

from proxy.websocket_tape import ConversationPlayer, ConversationRecorder, served_upgrade
from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack


class World:
    """A WebSocket server on loopback that greets, then answers each message with a draw."""

    def __init__(self) -> None:
        self.connections = 0
        self._lock = threading.Lock()
        self.server: Server = serve(self._handle, "127.0.0.1", 0)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.socket.getsockname()[:2]
        return f"ws://{host}:{port}/tools"

    def _handle(self, connection: ServerConnection) -> None:
        with self._lock:
            self.connections += 1
        connection.send(f"hello {random.random()}")
        for message in connection:
            if isinstance(message, bytes):
                connection.send(message[::-1] + random.randbytes(4))
            else:
                connection.send(f"{message}: {random.random()}")
                connection.send("done")


@pytest.fixture
def world() -> Iterator[World]:
    running = World()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.thread.join(timeout=10)


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


def test_a_sibling_whose_message_differs_is_closed_naming_it_and_reaches_no_world(
    stack: Stack, world: World
) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    converse(stack, world, tape, first, SAID)

    with pytest.raises(ConnectionClosed) as closed:
        converse(stack, world, tape, second, ["search solar", b"other bytes"])

    assert world.connections == 1
    received = closed.value.rcvd
    assert received is not None and received.code == 1011
    assert received.reason == "groundhog: client message 1 differs from the recording"
    assert "has crashed" not in stack.proxy.log()


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
