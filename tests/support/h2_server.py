"""A real HTTPS upstream on loopback that speaks HTTP/2 when asked and says what it spoke.

A test of "recorded traffic keeps HTTP/2" needs a world that can tell: this server offers
`h2` and `http/1.1` by ALPN, answers over whichever the client negotiated, and puts that in
every answer (`http_version`) and in its log of requests. It is built on `h2` (the HTTP/2 state
machine mitmproxy itself uses) on an asyncio loop of its own, in a daemon thread, so it runs
beside a test's blocking clients.

Routes: `/item` answers JSON naming the protocol and a per-path count; `/stream` answers an
event stream in two parts and holds the second until the test calls `release()`, so a test can
show the first part reached its client while the upstream was still answering.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import ConnectionTerminated, RequestReceived, StreamEnded, StreamReset

FIRST_EVENT = b"data: first\n\n"
LAST_EVENT = b"data: last\n\n"
# Bounds a stream held for release() so a failing test cannot leave the server stuck.
RELEASE_TIMEOUT_SECONDS = 30.0


@dataclass
class H2Seen:
    method: str
    path: str
    http_version: str


@dataclass
class H2State:
    requests: list[H2Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, path: str | None = None) -> int:
        with self.lock:
            return sum(1 for seen in self.requests if path is None or seen.path == path)

    def versions(self, path: str) -> list[str]:
        with self.lock:
            return [seen.http_version for seen in self.requests if seen.path == path]


class H2Upstream:
    """`with H2Upstream(cert, key) as world:` serves on 127.0.0.1 until the block ends."""

    def __init__(self, cert: Path, key: Path, name: str = "h2-world") -> None:
        self.name = name
        self.state = H2State()
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(str(cert), str(key))
        self._context.set_alpn_protocols(["h2", "http/1.1"])
        self._release = threading.Event()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def release(self) -> None:
        """Let every held `/stream` send its last part."""
        self._release.set()

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError("the HTTP/2 upstream did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    # -- the server's own thread ---------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, ssl=self._context)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            self._loop.close()

    def _seen(self, method: str, path: str, version: str) -> int:
        with self.state.lock:
            self.state.requests.append(H2Seen(method, path, version))
            return sum(1 for seen in self.state.requests if seen.path == path)

    def _item(self, path: str, version: str, count: int) -> bytes:
        answer = {"server": self.name, "http_version": version, "path": path, "count": count}
        return json.dumps(answer).encode()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        ssl_object = writer.get_extra_info("ssl_object")
        try:
            if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
                await self._serve_h2(reader, writer)
            else:
                await self._serve_http1(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def _serve_http1(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        """Just enough HTTP/1.1 to answer `/item`, so a downgrade shows in the answer."""
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            path = target.split("?", 1)[0]
            body = self._item(path, "HTTP/1.1", self._seen(method, path, "HTTP/1.1"))
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()

    async def _serve_h2(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        connection = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        connection.initiate_connection()
        writer.write(connection.data_to_send())
        await writer.drain()
        asked: dict[int, tuple[str, str]] = {}
        tasks: set[asyncio.Task[None]] = set()
        while True:
            data = await reader.read(65536)
            if not data:
                return
            for event in connection.receive_data(data):
                if isinstance(event, RequestReceived):
                    headers = dict(event.headers)
                    path = str(headers[":path"]).split("?", 1)[0]
                    asked[event.stream_id] = (str(headers[":method"]), path)
                elif isinstance(event, StreamEnded) and event.stream_id in asked:
                    method, path = asked.pop(event.stream_id)
                    count = self._seen(method, path, "HTTP/2")
                    task = asyncio.create_task(
                        self._answer(connection, writer, event.stream_id, path, count)
                    )
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif isinstance(event, StreamReset):
                    asked.pop(event.stream_id, None)
                elif isinstance(event, ConnectionTerminated):
                    return
            writer.write(connection.data_to_send())
            await writer.drain()

    async def _answer(
        self, connection: H2Connection, writer: asyncio.StreamWriter, stream: int, path: str, n: int
    ) -> None:
        if path == "/stream":
            head = [(":status", "200"), ("content-type", "text/event-stream")]
            connection.send_headers(stream, head)
            connection.send_data(stream, FIRST_EVENT)
            writer.write(connection.data_to_send())
            await writer.drain()
            await asyncio.to_thread(self._release.wait, RELEASE_TIMEOUT_SECONDS)
            connection.send_data(stream, LAST_EVENT, end_stream=True)
        else:
            body = self._item(path, "HTTP/2", n)
            head = [
                (":status", "200"),
                ("content-type", "application/json"),
                ("content-length", str(len(body))),
            ]
            connection.send_headers(stream, head)
            connection.send_data(stream, body, end_stream=True)
        writer.write(connection.data_to_send())
        await writer.drain()
