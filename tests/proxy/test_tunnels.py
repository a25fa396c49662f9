"""Raw bytes inside a CONNECT tunnel never reach the world unless a passthrough list allows it.

Through the real resolver and proxy: a raw echo server on loopback counts connections and bytes;
a client CONNECTs to it and sends bytes that are neither HTTP nor TLS. Closed with zero bytes
delivered on an online tape with no list, on a sealed tape, with no tape named and with the
resolver killed; relayed when the host is on the tape's or the proxy's passthrough list and the
tape is online.
"""

from __future__ import annotations

import base64
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.reliability.raw_tunnel import RAW_PROBE, EchoServer, raw_through_tunnel
from tests.proxy.stack import Stack, running_stack

# The proxy's own list names `localhost`; the tapes' lists name 127.0.0.1.
PROXY_LISTED_HOST = "localhost"


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


@pytest.fixture(scope="module")
def tunnel_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(
        tmp_path_factory.mktemp("tunnel-data"), "--tcp-passthrough-host", PROXY_LISTED_HOST
    ) as stack:
        yield stack


def _assert_closed_untouched(outcome, echo: EchoServer) -> None:
    assert outcome.connect_status == 200
    assert outcome.closed and not outcome.relayed, outcome
    assert echo.snapshot() == (0, 0)


def test_online_tape_without_passthrough_closes_the_tunnel(
    tunnel_stack: Stack, echo: EchoServer
) -> None:
    tape = tunnel_stack.open_tape(world_seed=1)
    outcome = raw_through_tunnel(tunnel_stack.proxy.port, echo.port, tape=tape, branch="root")
    _assert_closed_untouched(outcome, echo)
    assert "closed, nothing relayed" in tunnel_stack.proxy.log()


def test_tape_passthrough_host_is_relayed_while_online(
    tunnel_stack: Stack, echo: EchoServer
) -> None:
    tape = tunnel_stack.open_tape(world_seed=1, passthrough_hosts=["127.0.0.1"])
    outcome = raw_through_tunnel(tunnel_stack.proxy.port, echo.port, tape=tape, branch="root")
    assert outcome.relayed, outcome
    assert echo.snapshot() == (1, len(RAW_PROBE))


def test_sealed_tape_closes_even_a_passthrough_host(tunnel_stack: Stack, echo: EchoServer) -> None:
    tape = tunnel_stack.open_tape(world_seed=1, passthrough_hosts=["127.0.0.1"])
    tunnel_stack.seal(tape)
    outcome = raw_through_tunnel(tunnel_stack.proxy.port, echo.port, tape=tape, branch="root")
    _assert_closed_untouched(outcome, echo)


def test_no_tape_named_closes_the_tunnel(tunnel_stack: Stack, echo: EchoServer) -> None:
    outcome = raw_through_tunnel(tunnel_stack.proxy.port, echo.port, target_host=PROXY_LISTED_HOST)
    _assert_closed_untouched(outcome, echo)


def test_unknown_tape_closes_the_tunnel(tunnel_stack: Stack, echo: EchoServer) -> None:
    outcome = raw_through_tunnel(
        tunnel_stack.proxy.port,
        echo.port,
        tape="no-such-tape",
        branch="root",
        target_host=PROXY_LISTED_HOST,
    )
    _assert_closed_untouched(outcome, echo)


def test_proxy_passthrough_list_relays_on_an_online_tape_only(
    tunnel_stack: Stack, echo: EchoServer
) -> None:
    tape = tunnel_stack.open_tape(world_seed=1)
    outcome = raw_through_tunnel(
        tunnel_stack.proxy.port, echo.port, tape=tape, branch="root", target_host="localhost"
    )
    assert outcome.relayed, outcome
    assert echo.snapshot() == (1, len(RAW_PROBE))
    tunnel_stack.seal(tape)
    sealed = raw_through_tunnel(
        tunnel_stack.proxy.port, echo.port, tape=tape, branch="root", target_host="localhost"
    )
    assert sealed.closed and not sealed.relayed, sealed
    assert echo.snapshot() == (1, len(RAW_PROBE))


def test_resolver_killed_closes_the_tunnel(tmp_path: Path, echo: EchoServer) -> None:
    with running_stack(tmp_path / "data") as stack:
        tape = stack.open_tape(world_seed=1, passthrough_hosts=["127.0.0.1"])
        allowed = raw_through_tunnel(stack.proxy.port, echo.port, tape=tape, branch="root")
        assert allowed.relayed, allowed  # the same tunnel is allowed while the resolver answers
        before = echo.snapshot()
        stack.resolver.kill_hard()
        outcome = raw_through_tunnel(stack.proxy.port, echo.port, tape=tape, branch="root")
        assert outcome.connect_status == 200
        assert outcome.closed and not outcome.relayed, outcome
        assert echo.snapshot() == before


def test_raw_bytes_inside_tls_are_closed_too(tunnel_stack: Stack, echo: EchoServer) -> None:
    """TLS the proxy terminates can still carry a protocol it cannot parse: same rule."""
    tape = tunnel_stack.open_tape(world_seed=1)
    with socket.create_connection(("127.0.0.1", tunnel_stack.proxy.port), timeout=20) as raw:
        target = f"127.0.0.1:{echo.port}"
        credentials = base64.b64encode(f"{tape}:root".encode()).decode()
        raw.sendall(
            f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
            f"Proxy-Authorization: Basic {credentials}\r\n\r\n".encode()
        )
        assert raw.recv(4096).startswith(b"HTTP/1.1 200")
        context = ssl.create_default_context(cafile=str(tunnel_stack.ca))
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(RAW_PROBE)
            try:
                reply = tls.recv(4096)
            except (ConnectionResetError, ssl.SSLError):
                reply = b""
    assert reply == b""
    assert echo.snapshot() == (0, 0)
