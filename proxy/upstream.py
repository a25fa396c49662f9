"""Fetch a recordable request from the live world, owning every failure.

mitmproxy's own forwarding answers an upstream failure with its own text/html 502 and gives
addons no way to replace it; but an upstream failure is part of the recorded world: the
resolver records it and every asker of that address must get the same problem+json bytes.
So requests the resolver wants recorded are fetched here (HTTP/1.1, raw bytes: no
decompression, no cookies, no redirects, no added headers) and failures come back as a typed
`UpstreamFailure` with the protocol's error kind. Streams, WebSockets and oversized bodies are
not fetched here: mitmproxy passes those through natively.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass

import aiohttp
import certifi
from mitmproxy import http
from multidict import CIMultiDict
from yarl import URL

from proxy.wire import header_text

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authenticate",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
    }
)
SKIP_AUTO_HEADERS = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


@dataclass
class UpstreamResponse:
    status: int
    reason: str
    http_version: str
    fields: tuple[tuple[bytes, bytes], ...]
    body: bytes
    too_large: bool

    def to_response(self) -> http.Response:
        """The response for the worker: exactly the bytes and headers the world sent."""
        now = time.time()
        return http.Response(
            http_version=self.http_version.encode("ascii"),
            status_code=self.status,
            reason=self.reason.encode("latin-1", "replace"),
            headers=self.fields,
            content=self.body,
            trailers=None,
            timestamp_start=now,
            timestamp_end=now,
        )


@dataclass
class UpstreamFailure(Exception):
    kind: str  # connect | timeout | reset | tls | other
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class UpstreamClient:
    def __init__(
        self,
        *,
        verify_tls: bool = True,
        ca_file: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        max_body_bytes: int = 8 * 1024 * 1024,
        proxy: str | None = None,
    ) -> None:
        self.verify_tls = verify_tls
        # The egress proxy (--upstream-proxy) mitmproxy's own forwarding goes through too.
        self.proxy = proxy
        self.ca_file = ca_file
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_body_bytes = max_body_bytes
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _ssl(self) -> ssl.SSLContext | bool:
        if not self.verify_tls:
            return False
        # The same trust store mitmproxy itself verifies upstreams with.
        context = ssl.create_default_context(cafile=self.ca_file or certifi.where())
        context.set_alpn_protocols(["http/1.1"])
        return context

    def _ensure_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl(), keepalive_timeout=30),
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                trust_env=False,
                skip_auto_headers=SKIP_AUTO_HEADERS,
            )
            # aiohttp silently re-sends an idempotent request once when a kept-alive connection
            # is reset; one live ask must be exactly one upstream call (single flight), and the
            # reset is the world's answer to record. No public switch: aiohttp's own test_utils
            # sets this private flag the same way.
            self._session._retry_connection = False
            self._loop = loop
        return self._session

    async def fetch(self, request: http.Request) -> UpstreamResponse:
        session = self._ensure_session()
        authority = f"{request.host}:{request.port}"
        if ":" in request.host:
            authority = f"[{request.host}]:{request.port}"
        url = URL(f"{request.scheme}://{authority}{request.path or '/'}", encoded=True)
        headers: CIMultiDict[str] = CIMultiDict(
            (header_text(name), header_text(value))
            for name, value in request.headers.fields
            if name.lower() not in HOP_BY_HOP
        )
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.connect_timeout, sock_read=self.read_timeout
        )
        body = request.raw_content
        try:
            async with session.request(
                request.method,
                url,
                headers=headers,
                data=body if body else None,
                allow_redirects=False,
                timeout=timeout,
                proxy=self.proxy,
            ) as response:
                content, too_large = await self._read_body(response)
                return UpstreamResponse(
                    status=response.status,
                    reason=response.reason or "",
                    http_version=f"HTTP/{response.version.major}.{response.version.minor}",
                    fields=tuple(response.raw_headers),
                    body=content,
                    too_large=too_large,
                )
        except UpstreamFailure:
            raise
        except Exception as error:
            raise classify(error) from error

    async def _read_body(self, response: aiohttp.ClientResponse) -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), size > self.max_body_bytes

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def classify(error: BaseException) -> UpstreamFailure:
    """Name a transport failure with the protocol's error kinds."""
    message = str(error) or type(error).__name__
    if isinstance(error, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
        return UpstreamFailure("tls", message)
    if isinstance(error, ssl.SSLError):
        return UpstreamFailure("tls", message)
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return UpstreamFailure("timeout", f"connect timed out: {message}")
    if isinstance(error, TimeoutError | asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        return UpstreamFailure("timeout", message)
    if isinstance(error, aiohttp.ClientConnectorError):
        return UpstreamFailure("connect", message)
    if isinstance(
        error,
        aiohttp.ServerDisconnectedError
        | aiohttp.ClientPayloadError
        | aiohttp.ClientOSError
        | ConnectionResetError,
    ):
        return UpstreamFailure("reset", message)
    return UpstreamFailure("other", f"{type(error).__name__}: {message}")
