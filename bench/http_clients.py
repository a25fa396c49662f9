"""HTTP for the benchmark's clients: one TLS context, and kept-alive plain-HTTP connections.

A run opens a client per rollout (each branch through the proxy, each live reference run), and
two costs of that were most of the benchmark driver's own CPU in a run held to 45 minutes on
two cores (issue 33 item 9):

- `httpx.Client()` builds a fresh TLS context each time, loading the whole CA bundle (about
  80 ms of CPU per client with a proxy): the bundle does not change during a run, so one
  context (`tls_context`) serves every client;
- httpcore's pure-Python connection pool and h11 parser per request. `exchange` sends
  plain-HTTP requests over the standard library's `http.client` on connections a client keeps
  alive in its own `ConnectionPool`, closed with the client. The rollouts reach it through
  `bench/rollout_client.py`; `client()` puts it under an `httpx.Client` (`KeptAliveTransport`)
  for the callers that want httpx's API (world control, the faults row), with HTTPS left to
  httpx's own transport and the shared context.

A benchmark cell's rollouts share one pool (`bench.groups.RunContext.connections`): each
request names its tape and branch in headers, so a connection to the proxy can serve the next
rollout, and the proxy's upstream connection with it. Pools were per client until the proxy
learnt to close an upstream connection idle longer than `groundhog_upstream_idle` (1 s) instead
of reusing it: before, a connection to the proxy that outlived a rollout kept the upstream one
open while the tape served hits, the world's keep-alive (uvicorn: 5 s) closed it, and a write
sent just as it closed was answered `502 reset` (a full run met it after 22 minutes).
"""

from __future__ import annotations

import base64
import functools
import http.client
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import httpx

IDLE_PER_TARGET = 64
"""Idle connections kept per target; beyond it a returned connection is closed."""
KEEPALIVE_SECONDS = 2.0
"""An idle connection older than this is closed, not reused: well inside uvicorn's 5 s, so a
request is not sent on a connection the server is closing (httpx's pool has the same rule)."""
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once per process."""
    return httpx.create_ssl_context()


class ConnectionPool:
    """One client's idle kept-alive connections per (host, port)."""

    def __init__(self, idle_per_target: int = IDLE_PER_TARGET) -> None:
        self.idle_per_target = idle_per_target
        self._idle: dict[tuple[str, int], list[tuple[http.client.HTTPConnection, float]]] = {}
        self._lock = threading.Lock()

    def take(self, host: str, port: int, timeout: float | None) -> tuple[Any, bool]:
        """An idle connection to ``host:port`` still open (and whether it was reused), or a new
        one, not yet connected."""
        while True:
            with self._lock:
                idle = self._idle.get((host, port))
                connection, since = idle.pop() if idle else (None, 0.0)
            if connection is None:
                return http.client.HTTPConnection(host, port, timeout=timeout), False
            if time.monotonic() - since < KEEPALIVE_SECONDS and _still_open(connection):
                connection.timeout = timeout
                if connection.sock is not None:
                    connection.sock.settimeout(timeout)
                return connection, True
            connection.close()

    def give_back(self, host: str, port: int, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault((host, port), [])
            if len(idle) < self.idle_per_target:
                idle.append((connection, time.monotonic()))
                return
        connection.close()

    def idle(self) -> dict[tuple[str, int], int]:
        """Idle connections per target (for tests and diagnostics)."""
        with self._lock:
            return {target: len(idle) for target, idle in self._idle.items() if idle}

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection, _ in connections:
                connection.close()


def _still_open(connection: http.client.HTTPConnection) -> bool:
    """An idle connection whose socket is readable was closed by the peer (or sent garbage)."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


@dataclass(frozen=True)
class Answer:
    """A whole HTTP answer, as `exchange` read it."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    content: bytes


class Route:
    """Where a client's plain-HTTP requests go: straight to their origin, or through a proxy
    (absolute-form targets, and the proxy URL's credentials as `Proxy-Authorization`)."""

    def __init__(self, proxy: str | None = None) -> None:
        self.proxy = httpx.URL(proxy) if proxy else None
        self.authorization: list[tuple[bytes, bytes]] = []
        if self.proxy is not None and self.proxy.userinfo:
            user, _, password = self.proxy.userinfo.decode("ascii").partition(":")
            pair = f"{unquote(user)}:{unquote(password)}".encode()
            self.authorization = [(b"Proxy-Authorization", b"Basic " + base64.b64encode(pair))]

    def target(self, url: str, host: str, port: int, origin_form: str) -> tuple[str, int, str]:
        """(host, port) to connect to and the request target for ``url``."""
        if self.proxy is None:
            return host, port, origin_form
        return str(self.proxy.host), self.proxy.port or 80, url.partition("#")[0]


def exchange(
    route: Route,
    method: str,
    url: tuple[str, str, int, str],
    headers: Iterable[tuple[bytes | str, bytes | str]],
    body: bytes | None,
    timeout: float | None,
    pool: ConnectionPool,
) -> Answer:
    """Send one request on a kept-alive connection of ``pool`` and read its whole answer.

    ``url`` is (absolute URL, host, port, origin-form target). Errors are httpx's transport
    errors. A request that meets a kept-alive connection the peer had closed (between the
    check in `take` and the send) is sent once more on a new connection if it is idempotent;
    any other is left to the caller, as it may have reached the peer.
    """
    host, port, target = route.target(*url)
    lines = [*headers, *route.authorization]
    connection, reused = pool.take(host, port, timeout)
    while True:
        try:
            return _exchange_on(pool, connection, method, target, lines, body)
        except BaseException as error:
            connection.close()
            if not isinstance(error, _DROPPED):
                raise
            if not reused or method not in IDEMPOTENT:
                raise _as_httpx(error) from error
        connection, reused = http.client.HTTPConnection(host, port, timeout=timeout), False


def _exchange_on(
    pool: ConnectionPool,
    connection: http.client.HTTPConnection,
    method: str,
    target: str,
    headers: list[tuple[bytes | str, bytes | str]],
    body: bytes | None,
) -> Answer:
    """One request and its whole answer; a dropped connection's error is raised as is."""
    try:
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            connection.putheader(name, value)
        connection.endheaders(body or None)
        answer = connection.getresponse()
        content = answer.read()
    except _DROPPED:
        raise
    except (OSError, http.client.HTTPException) as error:
        raise _as_httpx(error) from error
    if answer.will_close:
        connection.close()
    else:
        pool.give_back(str(connection.host), connection.port, connection)
    return Answer(answer.status, answer.reason, answer.getheaders(), content)


class KeptAliveTransport(httpx.BaseTransport):
    """An httpx transport for plain HTTP over `exchange`, straight or through an HTTP proxy."""

    def __init__(
        self,
        proxy: str | None = None,
        *,
        timeout: float | None,
    ) -> None:
        self.route = Route(proxy)
        self.timeout = timeout
        self.pool = ConnectionPool()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"{url.scheme}: not a plain-HTTP request")
        where = (str(url), str(url.host), url.port or 80, url.raw_path.decode("ascii"))
        answer = exchange(
            self.route,
            request.method,
            where,
            request.headers.raw,
            request.read(),
            self.timeout,
            self.pool,
        )
        return httpx.Response(
            answer.status,
            headers=answer.headers,
            stream=httpx.ByteStream(answer.content),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason.encode()},
        )

    def close(self) -> None:
        self.pool.close()


_DROPPED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
"""What a request on a connection the peer has closed meets."""


def _as_httpx(error: BaseException) -> httpx.TransportError:
    """http.client's and the socket's errors as the httpx errors callers catch (httpx's
    client attaches the request)."""
    if isinstance(error, TimeoutError):
        return httpx.ReadTimeout(str(error))
    if isinstance(error, ConnectionRefusedError | socket.gaierror):
        return httpx.ConnectError(str(error))
    if isinstance(error, http.client.HTTPException | ConnectionResetError | BrokenPipeError):
        return httpx.RemoteProtocolError(str(error))
    return httpx.ReadError(str(error))


def client(*, proxy: str | None = None, **settings: Any) -> httpx.Client:
    """An ``httpx.Client`` that ignores proxy variables, keeps plain-HTTP connections alive
    until it is closed, and reuses the shared TLS context for HTTPS."""
    timeout = httpx.Timeout(settings.get("timeout", httpx.Timeout(5.0)))
    context = tls_context()
    return httpx.Client(
        trust_env=False,
        verify=context,
        mounts={
            "http://": KeptAliveTransport(proxy, timeout=timeout.read),
            "https://": httpx.HTTPTransport(verify=context, proxy=proxy),
        },
        **settings,
    )
