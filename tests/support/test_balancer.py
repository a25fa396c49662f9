"""tests/support/balancer.py against real servers: connections (not requests) go round-robin,
a backend that refuses is skipped, bytes go both ways, a side's close ends the other, and a
stopped balancer leaves no connection or thread behind.

The replica-failover tests (tests/deploy/test_leases_many_replicas.py) lean on each of these:
a balancer that sent a connection to a dead backend, or kept a dead replica's connection open,
would test a deployment no Service gives."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.proxy.upstream_server import Upstream
from tests.support.balancer import Balancer
from tests.support.servers import LOOPBACK, accepting, free_ports, wait_until


class EchoServer:
    """A raw TCP server that echoes what it reads and notes each connection's end."""

    def __init__(self) -> None:
        self._listener = socket.create_server((LOOPBACK, 0))
        self.port: int = self._listener.getsockname()[1]
        self.ended = threading.Event()  # a client connection reached its end (EOF or reset)
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            threading.Thread(target=self._echo, args=(connection,), daemon=True).start()

    def _echo(self, connection: socket.socket) -> None:
        try:
            while data := connection.recv(4096):
                connection.sendall(data)
        except OSError:
            pass
        self.ended.set()

    def stop(self) -> None:
        self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=10)
        for connection in self.connections:
            connection.close()


@pytest.fixture
def upstreams() -> Iterator[list[Upstream]]:
    servers = [Upstream(name="a"), Upstream(name="b")]
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    try:
        yield server
    finally:
        server.stop()


def served_by(port: int, path: str = "/who", connection: http.client.HTTPConnection | None = None):
    """Which upstream answered a GET through the balancer on `port` (a new connection unless
    one is given)."""
    own = connection or http.client.HTTPConnection(LOOPBACK, port, timeout=30)
    try:
        own.request("GET", path)
        return json.loads(own.getresponse().read())["server"]
    finally:
        if connection is None:
            own.close()


def test_each_new_connection_goes_to_the_next_backend_and_keeps_it(
    upstreams: list[Upstream],
) -> None:
    with Balancer([server.port for server in upstreams]) as balancer:
        assert [served_by(balancer.port) for _ in range(4)] == ["a", "b", "a", "b"]
        # A keep-alive connection stays with the backend it went to, request after request.
        kept = http.client.HTTPConnection(LOOPBACK, balancer.port, timeout=30)
        try:
            assert {served_by(balancer.port, connection=kept) for _ in range(3)} == {"a"}
        finally:
            kept.close()
    assert balancer.served == {upstreams[0].port: 3, upstreams[1].port: 2}


def test_a_backend_that_refuses_is_skipped(upstreams: list[Upstream]) -> None:
    (dead,) = free_ports(1)  # nothing listens there
    assert not accepting(dead)
    with Balancer([dead, upstreams[0].port, upstreams[1].port]) as balancer:
        answered = [served_by(balancer.port) for _ in range(6)]
    assert set(answered) == {"a", "b"}
    assert balancer.refused[dead] >= 1 and balancer.served[dead] == 0
    assert balancer.served[upstreams[0].port] + balancer.served[upstreams[1].port] == 6


def test_a_backend_that_dies_is_skipped_from_then_on(upstreams: list[Upstream]) -> None:
    a, b = upstreams
    with Balancer([a.port, b.port]) as balancer:
        assert served_by(balancer.port) == "a"
        a.stop()
        assert [served_by(balancer.port) for _ in range(3)] == ["b"] * 3
    assert balancer.refused[a.port] >= 1


def test_a_client_is_closed_at_once_when_every_backend_refuses() -> None:
    with Balancer(free_ports(2)) as balancer:
        client = socket.create_connection((LOOPBACK, balancer.port), timeout=30)
        with client:
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            # Closed with nothing said, or reset: no answer, as from a Service with no endpoint.
            with contextlib.suppress(ConnectionResetError):
                assert client.recv(100) == b""
        wait_until(lambda: balancer.turned_away == 1, what="the client turned away")


def test_bytes_go_both_ways_and_a_client_close_closes_the_backend(echo: EchoServer) -> None:
    with Balancer([echo.port]) as balancer:
        client = socket.create_connection((LOOPBACK, balancer.port), timeout=30)
        client.sendall(b"x" * 200_000)
        got = b""
        while len(got) < 200_000:
            got += client.recv(65536)
        assert got == b"x" * 200_000
        assert balancer.open_connections() == {echo.port: 1}
        client.close()
        assert echo.ended.wait(30), "the backend connection outlived its client"
        wait_until(lambda: not balancer.open_connections(), what="the link to end")


def test_a_backend_close_closes_the_client(echo: EchoServer) -> None:
    with Balancer([echo.port]) as balancer:
        client = socket.create_connection((LOOPBACK, balancer.port), timeout=30)
        with client:
            client.sendall(b"hello")
            assert client.recv(5) == b"hello"
            echo.connections[0].shutdown(socket.SHUT_RDWR)  # the backend hangs up
            assert client.recv(5) == b""
        wait_until(lambda: not balancer.open_connections(), what="the link to end")


def test_stop_ends_piped_connections_and_refuses_new_ones(echo: EchoServer) -> None:
    before = threading.active_count()
    balancer = Balancer([echo.port])
    client = socket.create_connection((LOOPBACK, balancer.port), timeout=30)
    with client:
        client.sendall(b"hi")
        assert client.recv(2) == b"hi"
        balancer.stop()
        assert client.recv(2) == b""  # the balancer's end of it closed
    assert echo.ended.wait(30)
    assert not accepting(balancer.port)
    assert threading.active_count() <= before + 1  # the echo server's own handler may linger
