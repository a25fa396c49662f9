"""proxy/websocket_live.py against a real `websockets` server: the handshake, the world's
answers to replayed messages passed over, its close reported, and refusals raised clearly."""

from __future__ import annotations

import asyncio
import socket

import pytest
from mitmproxy.http import Headers
from mitmproxy.test import tutils

from proxy.websocket_live import LiveConnectFailed, LiveConversation, Upstream
from tests.proxy.websocket_world import World


def upgrade(port: int, path: str = "/tools"):
    return tutils.treq(
        host="127.0.0.1",
        port=port,
        path=path.encode(),
        headers=Headers(
            host=f"127.0.0.1:{port}",
            upgrade="websocket",
            connection="Upgrade",
            sec_websocket_key="dGhlIHNhbXBsZSBub25jZQ==",
            sec_websocket_version="13",
        ),
    )


def test_the_world_answers_past_what_is_swallowed_and_its_close_is_reported(world: World) -> None:
    async def go():
        port = world.server.socket.getsockname()[1]
        live = await LiveConversation.open(upgrade(port), Upstream(), timeout=10)
        live.swallow = 1  # the world's greeting: the client had it from the tape
        heard: list[tuple[bool, bytes]] = []
        closed: list[tuple[int, str]] = []
        await live.send(False, b"\x01\x02")
        await live.send(True, b"bye")
        await asyncio.wait_for(
            live.relay(lambda t, c: heard.append((t, c)), closed_append(closed)), 30
        )
        return heard, closed

    heard, closed = asyncio.run(go())
    assert heard[0][0] is False and heard[0][1][:2] == b"\x02\x01"
    assert heard[1][0] is True and heard[1][1].startswith(b"bye ")
    assert len(heard) == 2  # the greeting was passed over
    assert closed == [(4001, "the world is done")]
    assert world.received == [[b"\x01\x02", "bye"]]


def closed_append(closed: list[tuple[int, str]]):
    return lambda code, reason: closed.append((code, reason))


def test_an_unreachable_world_and_a_refused_upgrade_raise_naming_why() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(LiveConnectFailed, match=f"cannot reach 127.0.0.1:{port}"):
        asyncio.run(LiveConversation.open(upgrade(port), Upstream(), timeout=10))

    async def refusing() -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        async with server:
            bound = server.sockets[0].getsockname()[1]
            await LiveConversation.open(upgrade(bound), Upstream(), timeout=10)

    with pytest.raises(LiveConnectFailed, match="answered the upgrade 403"):
        asyncio.run(refusing())
