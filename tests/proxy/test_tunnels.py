"""Raw bytes inside a CONNECT tunnel never reach the world unless a passthrough list allows it.

Through the real resolver and proxy: a raw echo server on loopback counts connections and bytes;
a client CONNECTs to it and sends bytes that are neither HTTP nor TLS. Closed with zero bytes
delivered on an online tape with no list, on a sealed tape, with no tape named and with the
resolver killed; relayed when the host is on the tape's or the proxy's passthrough list and the
tape is online.
"""

from __future__ import annotations

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
