"""Unit tests of proxy/resolver_http.py against scripted raw HTTP servers on loopback.

Each server is a real asyncio TCP (or TLS) server in the test's own loop that writes exactly
the bytes a test scripts, so framing, keep-alive and failure cases can be set up precisely.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from proxy.event_loop import EventLoop, loop_factory
from proxy.resolver_http import ResolverHttp, ResolverHttpError
from tests.support.certs import write_private_ca

type Run = Callable[[Coroutine[Any, Any, None]], None]


@pytest.fixture(params=[EventLoop.ASYNCIO, EventLoop.UVLOOP])
def run(request: pytest.FixtureRequest) -> Run:
    """Runs a test's coroutine on each loop the proxy can run on (proxy/event_loop.py): uvloop
    calls `connection_made` a turn later than asyncio does, and its transports are not
    asyncio.Transport subclasses."""

    def run_on(coroutine: Coroutine[Any, Any, None]) -> None:
        asyncio.run(coroutine, loop_factory=loop_factory(request.param))

    return run_on


# A script gets (connection number, request head, request body) and writes the answer itself.
Script = Callable[[int, bytes, bytes, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Scripted:
    port: int
    requests: list[tuple[int, bytes, bytes]] = field(default_factory=list)
    connections: int = 0
    ended: list[int] = field(default_factory=list)  # connections the client closed


def _ok(body: bytes, *extra: str) -> bytes:
    head = ["HTTP/1.1 200 OK", "Content-Type: application/json", *extra]
    if not any(line.lower().startswith(("content-length", "transfer-encoding")) for line in extra):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _answer_ok(_n: int, _head: bytes, body: bytes, writer: asyncio.StreamWriter) -> None:
    writer.write(_ok(b'{"echo":' + body + b"}"))


@asynccontextmanager
async def scripted(script: Script, tls: ssl.SSLContext | None = None) -> AsyncIterator[Scripted]:
    state = Scripted(port=0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        number = state.connections
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                state.requests.append((number, head, body))
                await script(number, head, body, writer)
                await writer.drain()
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            state.ended.append(number)
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state


def _client(port: int, *, keep_alive: float = 30.0, scheme: str = "http", **kw) -> ResolverHttp:
    headers = {"Content-Type": "application/json", "Authorization": "Bearer t"}
    return ResolverHttp(
        f"{scheme}://127.0.0.1:{port}/prefix", headers=headers, keep_alive_seconds=keep_alive, **kw
    )


def test_calls_share_one_keep_alive_connection_and_send_the_protocol_head(run: Run) -> None:
    async def go() -> None:
        async with scripted(_answer_ok) as server:
            client = _client(server.port)
            first = await client.post("/v1/resolve", b'{"n":1}', timeout=60)
            second = await client.post("/v1/record", b'{"n":2}', timeout=60)
            client.close()
        assert (first.status, json.loads(first.body)) == (200, {"echo": {"n": 1}})
        assert json.loads(second.body) == {"echo": {"n": 2}}
        assert ("Content-Type", "application/json") in first.headers
        assert server.connections == 1
        (_, head, _), (_, second_head, _) = server.requests
        lines = head.decode().split("\r\n")
        assert lines[0] == "POST /prefix/v1/resolve HTTP/1.1"
        assert f"Host: 127.0.0.1:{server.port}" in lines
        assert "Authorization: Bearer t" in lines
        assert "Content-Length: 7" in lines
        assert second_head.startswith(b"POST /prefix/v1/record ")

    run(go())


def test_a_chunked_answer_is_put_together(run: Run) -> None:
    async def chunked(_n: int, _head: bytes, _body: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(_ok(b'5\r\n{"a":\r\n3\r\n12}\r\n0\r\n\r\n', "Transfer-Encoding: chunked"))

    async def go() -> None:
        async with scripted(chunked) as server:
            client = _client(server.port)
            answers = [await client.post("/v1/resolve", b"{}", timeout=60) for _ in range(2)]
            client.close()
        assert [json.loads(answer.body) for answer in answers] == [{"a": 12}, {"a": 12}]
        assert server.connections == 1

    run(go())


def test_an_answer_without_a_length_ends_with_its_connection_which_is_not_reused(run: Run) -> None:
    async def unframed(_n: int, _head: bytes, _body: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"whole":true}')
        await writer.drain()
        writer.close()

    async def go() -> None:
        async with scripted(unframed) as server:
            client = _client(server.port)
            answers = [await client.post("/v1/resolve", b"{}", timeout=60) for _ in range(2)]
            client.close()
        assert [answer.body for answer in answers] == [b'{"whole":true}'] * 2
        assert server.connections == 2

    run(go())


def test_connection_close_and_an_idle_close_by_the_server_mean_a_new_connection(run: Run) -> None:
    async def script(number: int, _head: bytes, body: bytes, writer: asyncio.StreamWriter) -> None:
        if body == b"close-after":
            writer.write(_ok(b"{}", "Connection: close"))
            await writer.drain()
            writer.close()
        else:
            writer.write(_ok(b"{}"))

    async def go() -> None:
        async with scripted(script) as server:
            client = _client(server.port)
            await client.post("/v1/resolve", b"close-after", timeout=60)
            await client.post("/v1/resolve", b"{}", timeout=60)
            assert server.connections == 2
            client._idle[-1].transport.close()  # as if the server had dropped it while idle
            await asyncio.sleep(0)  # let the close be noticed, as an idle period would
            await client.post("/v1/resolve", b"{}", timeout=60)
            client.close()
        assert server.connections == 3

    run(go())


def test_a_connection_idle_past_keep_alive_is_not_reused(run: Run) -> None:
    async def go() -> None:
        async with scripted(_answer_ok) as server:
            client = _client(server.port, keep_alive=0.0)
            for _ in range(3):
                await client.post("/v1/resolve", b"{}", timeout=60)
            client.close()
        assert server.connections == 3

    run(go())


def test_an_answer_cut_short_is_a_connection_error(run: Run) -> None:
    async def cut(_n: int, _head: bytes, _body: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial')
        await writer.drain()
        writer.close()

    async def go() -> None:
        async with scripted(cut) as server:
            client = _client(server.port)
            with pytest.raises(ConnectionResetError, match="before answering"):
                await client.post("/v1/resolve", b"{}", timeout=60)
            client.close()

    run(go())


def test_an_answer_that_is_not_http_is_refused_and_its_connection_dropped(run: Run) -> None:
    async def garbage(_n: int, _head: bytes, _body: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")

    async def go() -> None:
        async with scripted(garbage) as server:
            client = _client(server.port)
            with pytest.raises(ResolverHttpError, match=r"not HTTP/1\.1"):
                await client.post("/v1/resolve", b"{}", timeout=60)
            assert not client._idle
            client.close()

    run(go())


def test_a_slow_answer_times_out_and_its_connection_is_closed(run: Run) -> None:
    release = asyncio.Event()

    async def slow(_n: int, _head: bytes, _body: bytes, writer: asyncio.StreamWriter) -> None:
        await release.wait()

    async def go() -> None:
        async with scripted(slow) as server:
            client = _client(server.port)
            with pytest.raises(TimeoutError):
                await client.post("/v1/resolve", b"{}", timeout=0.2)
            assert not client._idle and not client._open
            release.set()
            for _ in range(6000):  # the server notices the close; bounded, not timed
                if server.ended:
                    break
                await asyncio.sleep(0.01)
            client.close()
        assert server.ended == [1]

    run(go())


def test_concurrent_calls_each_get_their_own_answer_on_their_own_connection(run: Run) -> None:
    async def go() -> None:
        async with scripted(_answer_ok) as server:
            client = _client(server.port)
            bodies = [json.dumps({"n": n}).encode() for n in range(8)]
            answers = await asyncio.gather(
                *(client.post("/v1/resolve", body, timeout=60) for body in bodies)
            )
            again = await client.post("/v1/resolve", b"{}", timeout=60)
            client.close()
        assert [json.loads(a.body)["echo"]["n"] for a in answers] == list(range(8))
        assert again.status == 200
        assert server.connections == 8  # the ninth call reused one of them

    run(go())


def test_https_with_a_private_ca_is_verified(tmp_path: Path, run: Run) -> None:
    ca, certificate, key = write_private_ca(tmp_path, ["127.0.0.1"])
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(certificate, key)
    trusting = ssl.create_default_context(cafile=str(ca))

    async def go() -> None:
        async with scripted(_answer_ok, tls=server_tls) as server:
            client = _client(server.port, scheme="https", ssl_context=trusting)
            answer = await client.post("/v1/resolve", b'{"tls":1}', timeout=60)
            client.close()
            untrusting = _client(server.port, scheme="https")
            with pytest.raises(ssl.SSLCertVerificationError):
                await untrusting.post("/v1/resolve", b"{}", timeout=60)
            untrusting.close()
        assert json.loads(answer.body) == {"echo": {"tls": 1}}

    run(go())


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1", "127.0.0.1:8080", "http://"])
def test_a_resolver_url_that_is_not_http_is_refused_with_the_fix(url: str) -> None:
    with pytest.raises(ValueError, match="is not http://host"):
        ResolverHttp(url, headers={}, keep_alive_seconds=1)


def test_calls_over_the_limit_wait_for_a_connection_within_their_timeout(run: Run) -> None:
    release = asyncio.Event()

    async def held(_n: int, _head: bytes, body: bytes, writer: asyncio.StreamWriter) -> None:
        if body == b"hold":
            await release.wait()
        writer.write(_ok(b"{}"))

    async def go() -> None:
        async with scripted(held) as server:
            client = ResolverHttp(
                f"http://127.0.0.1:{server.port}", headers={}, keep_alive_seconds=30, limit=1
            )
            holding = asyncio.ensure_future(client.post("/v1/wait", b"hold", timeout=30))
            try:
                for _ in range(6000):  # until the long-poll has reached the server; bounded
                    if server.requests:
                        break
                    await asyncio.sleep(0.01)
                with pytest.raises(TimeoutError):  # the only slot is taken by the long-poll
                    await client.post("/v1/resolve", b"{}", timeout=0.2)
            finally:
                release.set()
            assert (await holding).status == 200
            assert (await client.post("/v1/resolve", b"{}", timeout=60)).status == 200
            client.close()
        assert server.connections == 1

    run(go())
