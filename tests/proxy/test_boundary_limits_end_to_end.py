"""The boundary is bounded (issue 53): head size, field count, framing, slowloris, half-open.

Each case runs through a real resolver, proxy and counting world, with the limits set small,
and requires a `refused` problem (or a closed connection) and nothing seen by the world.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest

from tests.proxy.raw_http import RawAnswer, exchange, parse
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream

DEADLINE = 60.0  # how long a test waits for the proxy to act; far above the limits set


@pytest.fixture(scope="module")
def world() -> Iterator[Upstream]:
    with Upstream(name="limits") as server:
        yield server


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(
        tmp_path_factory.mktemp("limits"),
        *("--set", "groundhog_header_timeout=1"),
        *("--set", "groundhog_max_header_bytes=4096"),
        *("--set", "groundhog_max_header_count=20"),
    ) as stack:
        yield stack


@pytest.fixture(scope="module")
def tape(limited: Stack) -> str:
    return limited.open_tape(world_seed=1)  # online: anything not refused would go live


def request(
    world: Upstream,
    tape: str,
    *extra: bytes,
    body: bytes = b"",
    path: str = "/limited",
    close: bool = True,
) -> bytes:
    url = f"http://127.0.0.1:{world.port}{path}".encode()
    lines = [
        b"POST " + url + b" HTTP/1.1",
        f"Host: 127.0.0.1:{world.port}".encode(),
        f"X-Groundhog-Tape: {tape}".encode(),
        b"X-Groundhog-Branch: root",
        *extra,
        *([b"Connection: close"] if close else [b"Content-Length: 0"]),
    ]
    return b"\r\n".join([*lines, b"", b""]) + body


def dribble_until_closed(sock: socket.socket, head: bytes) -> bytes:
    """Send `head` a few bytes at a time (never its blank line) until the proxy closes the
    connection or DEADLINE passes; whatever the proxy sent meanwhile."""
    received = bytearray()
    sent, closed = 0, False
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline and not closed:
        readable, _, _ = select.select([sock], [], [], 0.2)  # a poll, not a sleep
        if readable:
            try:
                chunk = sock.recv(4096)
            except ConnectionResetError:
                chunk = b""
            received += chunk
            closed = chunk == b""
            continue
        try:
            sock.sendall(head[sent : sent + 3] if sent < len(head) else b"X-Slow: a\r\n")
        except OSError:
            closed = True
        sent += 3
    assert closed, "the proxy kept a connection whose head never completed"
    return bytes(received)


def read_answer(sock: socket.socket) -> RawAnswer:
    """One complete answer from a kept-alive connection (its Content-Length tells the end)."""
    received = bytearray()
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        answer = parse(bytes(received))
        length = answer.header(b"content-length")
        if answer.status is not None and length is not None and len(answer.body) >= int(length):
            return answer
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return parse(bytes(received))


@pytest.mark.parametrize(
    ("extra", "body", "status", "detail"),
    [
        ((b"X-Big: " + b"a" * 5000,), b"", 431, b"groundhog_max_header_bytes"),
        (tuple(b"X-N%d: v" % n for n in range(25)), b"", 431, b"groundhog_max_header_count"),
        ((b"Content-Length: 99999999999999999999",), b"x", 400, b"Content-Length"),
        ((b"Content-Length: 12abc",), b"x", 400, b"content-length"),
        ((b"Content-Length: 1", b"Content-Length: 2"), b"xy", 400, b"content-length"),
        ((b"Transfer-Encoding: chunked",), b"zz\r\nxx\r\n0\r\n\r\n", 400, b""),
    ],
    ids=["head-bytes", "head-fields", "huge-length", "bad-length", "two-lengths", "bad-chunk"],
)
def test_an_unbounded_or_broken_request_is_refused(
    limited: Stack,
    world: Upstream,
    tape: str,
    extra: tuple[bytes, ...],
    body: bytes,
    status: int,
    detail: bytes,
) -> None:
    before = world.state.accepts
    answer = exchange(limited.proxy.port, request(world, tape, *extra, body=body))
    assert answer.status == status, answer.raw[:600]
    assert answer.decision == b"refused", answer.raw[:600]
    assert detail in answer.body
    assert world.state.accepts == before and world.state.count("/limited") == 0


def test_a_slow_head_is_cut_off(limited: Stack, world: Upstream, tape: str) -> None:
    """Slowloris: one header byte at a time never completes; the proxy closes it anyway."""
    before = world.state.accepts
    head = request(world, tape)[:-2]  # without the blank line that ends the head
    with socket.create_connection(("127.0.0.1", limited.proxy.port), timeout=DEADLINE) as sock:
        dribble_until_closed(sock, head)  # a reset counts as closed, as a FIN does
    assert world.state.accepts == before


def test_every_head_of_a_kept_alive_connection_has_a_deadline(
    limited: Stack, world: Upstream, tape: str
) -> None:
    """One full request and its answer, then the next head dribbled forever: cut with a 408
    (the first head's deadline, proxy/header_deadline.py, was settled by the first request)."""
    first = request(world, tape, path="/kept-alive", close=False)
    second = request(world, tape, path="/never-complete", close=False)[:-2]
    with socket.create_connection(("127.0.0.1", limited.proxy.port), timeout=DEADLINE) as sock:
        sock.sendall(first)
        answer = read_answer(sock)
        assert (answer.status, answer.decision) == (200, b"write"), answer.raw[:600]
        cut = parse(dribble_until_closed(sock, second))
    assert (cut.status, cut.decision) == (408, b"refused"), cut.raw[:600]
    assert b"groundhog_header_timeout" in cut.body
    assert world.state.count("/kept-alive") == 1 and world.state.count("/never-complete") == 0


def test_a_kept_alive_connection_may_idle_past_the_head_deadline(
    limited: Stack, world: Upstream, tape: str
) -> None:
    """The deadline runs from a head's first byte: between requests, no byte, no deadline
    (mitmproxy's tcp_timeout bounds an idle connection)."""
    with socket.create_connection(("127.0.0.1", limited.proxy.port), timeout=DEADLINE) as sock:
        sock.sendall(request(world, tape, path="/idle-1", close=False))
        assert read_answer(sock).status == 200
        # Three head deadlines of silence: a proxy that timed the idle gap would close now.
        readable, _, _ = select.select([sock], [], [], 3.0)
        assert not readable, "the proxy closed (or wrote to) an idle kept-alive connection"
        sock.sendall(request(world, tape, path="/idle-2", close=False))
        second = read_answer(sock)
    assert (second.status, second.decision) == (200, b"write"), second.raw[:600]


def test_half_open_connections_per_address_are_capped(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with running_stack(
        tmp_path_factory.mktemp("crowded"), *("--set", "groundhog_max_half_open=3")
    ) as stack:
        waiting = [
            socket.create_connection(("127.0.0.1", stack.proxy.port), timeout=DEADLINE)
            for _ in range(3)
        ]
        try:
            # Each of the three has its deadline running; a fourth from the address is closed.
            with socket.create_connection(
                ("127.0.0.1", stack.proxy.port), timeout=DEADLINE
            ) as extra:
                assert extra.recv(1) == b""
            # A connection that sends its head is no longer half-open: one more fits.
            waiting[0].sendall(b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = waiting[0].recv(4096)
            assert answer.startswith(b"HTTP/1.1 400"), (answer, stack.proxy.log()[-3000:])
            with socket.create_connection(
                ("127.0.0.1", stack.proxy.port), timeout=DEADLINE
            ) as fits:
                fits.sendall(b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = fits.recv(4096)
                assert answer.startswith(b"HTTP/1.1 400"), (answer, stack.proxy.log()[-3000:])
        finally:
            for sock in waiting:
                sock.close()
