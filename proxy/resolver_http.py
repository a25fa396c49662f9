"""A lean keep-alive HTTP/1.1 client for the resolver's JSON routes.

Every request through the proxy costs a `/v1/resolve` and every forward a `/v1/record`, so the
proxy's client for them runs once or twice per flow, in mitmproxy's single event loop. aiohttp,
which it used before, spent about 400 us of the proxy's CPU per call on this machine, twice what
this client spends (about 150-220 us, most of it the socket calls themselves; measured against a
resolver stand-in that answers at once, one call after another): request and response objects,
payload registries, cookie and tracing hooks a resolver call never needs. This client does only
what the protocol needs: POST a JSON body over a pooled keep-alive connection (TCP or TLS), and
read one answer framed by `Content-Length`, chunked encoding or the connection's end, parsed by
httptools (the C parser uvicorn serves the resolver with). A call is bounded by one total
timeout, connecting included.

Failures are the standard exceptions — `OSError` (refused, reset, closed mid-answer,
`ConnectionError` among them), `TimeoutError`, and `ResolverHttpError` (an answer that is not
HTTP) — which `proxy.resolver_client` turns into "resolver unavailable". A connection that
failed, timed out, or whose answer did not allow keep-alive is closed, never reused. Idle
connections are closed after `keep_alive_seconds`, before the resolver closes them (75 s,
resolver/__main__.py), so a call is never written into a socket the server is closing.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import time
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

import httptools

from proxy.errors import ProxyError


class ResolverHttpError(ProxyError, ConnectionError):
    """The resolver's answer was not well-formed HTTP/1.1."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class _Connection(asyncio.Protocol):
    """One connection to the resolver: one call in flight at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[Answer] | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._headers: list[tuple[str, str]] = []
        self._body: list[bytes] = []
        self._framed = False  # the answer declared its length or chunking
        self._headers_done = False

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio.Transport, only alike.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            # Bytes nobody asked for: the connection is out of step; never reuse it.
            self.close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(ResolverHttpError(f"the resolver's answer is not HTTP/1.1: {error}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and not self._framed:
            self._complete()  # an answer without a length ends with its connection
            return
        self._fail(ConnectionResetError("the resolver closed the connection before answering"))

    # -- httptools callbacks -----------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        lowered = name.lower()
        if lowered == b"content-length" or lowered == b"transfer-encoding":
            self._framed = True
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if not self._parser.should_keep_alive():
            self.close()
        self._complete()

    # -- calls --------------------------------------------------------------------------------

    async def call(self, request: bytes) -> Answer:
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self._headers, self._body = [], []
        self._framed = self._headers_done = False
        self.transport.write(request)
        return await self._waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            # A connection of a loop that has closed already (a finished asyncio.run) went
            # with it; there is nothing left to schedule its close on.
            with contextlib.suppress(RuntimeError):
                self.transport.close()

    def _complete(self) -> None:
        assert self._waiter is not None
        if not self._waiter.done():
            status = self._parser.get_status_code()
            self._waiter.set_result(Answer(status, self._headers, b"".join(self._body)))

    def _fail(self, error: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(error)


class ResolverHttp:
    """POST JSON to one resolver over pooled keep-alive connections."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: dict[str, str],
        keep_alive_seconds: float,
        ssl_context: ssl.SSLContext | None = None,
        limit: int = 256,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"resolver URL {base_url!r} is not http://host[:port] or https://…")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.keep_alive_seconds = keep_alive_seconds
        self._ssl = (
            (ssl_context or ssl.create_default_context()) if parts.scheme == "https" else None
        )
        authority = parts.netloc.rpartition("@")[2]
        fixed = {"Host": authority, **headers}
        self._head = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        # Calls in flight at once (long-polls included); more wait their turn, within their
        # timeout, instead of opening a connection each (aiohttp's connector had the same bound).
        self._slots = asyncio.Semaphore(limit)
        self._idle: collections.deque[_Connection] = collections.deque()
        self._open: set[_Connection] = set()

    async def post(self, path: str, body: bytes, *, timeout: float) -> Answer:
        request = (
            f"POST {self.prefix}{path} HTTP/1.1\r\n{self._head}Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1") + body
        connection: _Connection | None = None
        try:
            async with asyncio.timeout(timeout), self._slots:
                connection = self._reusable() or await self._connect()
                answer = await connection.call(request)
        except BaseException:
            if connection is not None:
                connection.close()  # mid-call: whatever is left on it is not ours to read
                self._open.discard(connection)
            raise
        if connection.closed:
            self._open.discard(connection)
        else:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        return answer

    def _reusable(self) -> _Connection | None:
        """The most recently used live idle connection; stale ones are closed on the way."""
        oldest_allowed = time.monotonic() - self.keep_alive_seconds
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and connection.idle_since >= oldest_allowed:
                return connection
            connection.close()
            self._open.discard(connection)
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        server_hostname = self.host if self._ssl is not None else None
        transport, connection = await loop.create_connection(
            _Connection, self.host, self.port, ssl=self._ssl, server_hostname=server_hostname
        )
        # uvloop calls `connection_made` on its next turn, after this returns: the transport is
        # the connection's from here on, whichever loop runs it.
        connection.transport = transport
        self._open.add(connection)
        return connection

    def close(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()
