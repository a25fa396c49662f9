"""A worker that keeps its connection to the proxy never has a live call meet the world's
keep-alive closing the proxy's upstream connection (`groundhog_upstream_idle`, proxy/native.py).

The world here closes a connection that sat idle past 1.5 s just as the next request arrives
(tests/proxy/expiring_keepalive_server.py): certain where the real race is rare. The worker is
httpx with one kept-alive connection to the proxy, as agents' clients pool theirs.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.proxy.clients import proxy_url
from tests.proxy.expiring_keepalive_server import ExpiringUpstream
from tests.proxy.stack import Stack, running_stack
from tests.support.servers import wait_until

WORLD_KEEPALIVE = 1.5  # above the proxy's default groundhog_upstream_idle (1 s)


@pytest.fixture(scope="module")
def default_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("idle-default")) as stack:
        yield stack


@pytest.fixture(scope="module")
def reusing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A proxy told to reuse upstream connections however long they sat idle (the old way)."""
    data = tmp_path_factory.mktemp("idle-reusing")
    with running_stack(data, "--set", "groundhog_upstream_idle=600") as stack:
        yield stack


@pytest.fixture(params=["http", "https"])
def world(
    request: pytest.FixtureRequest, upstream_cert: tuple[Path, Path]
) -> Iterator[ExpiringUpstream]:
    """The world over plain HTTP, and over HTTPS (each worker connection a CONNECT tunnel)."""
    cert = upstream_cert if request.param == "https" else None
    with ExpiringUpstream(expiry=WORLD_KEEPALIVE, cert=cert) as server:
        yield server


def _read_then_write(stack: Stack, world: ExpiringUpstream, quiet: bool) -> list[httpx.Response]:
    tape = stack.open_tape()
    proxy = proxy_url(stack.proxy.port, tape, "root")
    trust = ssl.create_default_context(cafile=str(stack.ca))
    with httpx.Client(proxy=proxy, trust_env=False, timeout=60, verify=trust) as client:
        read = client.get(f"{world.url}/item")
        if quiet:
            # The condition under test: the connection idle past the world's keep-alive, with a
            # second to spare for a loaded machine's lag between the world's answer and the
            # proxy's reading it (which starts the proxy's own idle clock).
            wait_until(
                lambda: world.state.quiet_for() > WORLD_KEEPALIVE + 1.0,
                timeout=60,
                what="the world's keep-alive to expire",
            )
        write = client.post(f"{world.url}/order", content=b"one order")
    return [read, write]


def test_a_write_after_a_quiet_spell_goes_out_on_a_fresh_connection(
    default_stack: Stack, world: ExpiringUpstream
) -> None:
    read, write = _read_then_write(default_stack, world, quiet=True)
    assert read.headers["X-Groundhog-Decision"] == "recorded"
    assert write.status_code == 200, write.text
    assert write.headers["X-Groundhog-Decision"] == "write"
    arrivals = world.state.seen()
    assert [(a.method, a.path, a.answered) for a in arrivals] == [
        ("GET", "/item", True),
        ("POST", "/order", True),
    ]  # the world saw the write once, and answered it
    assert arrivals[0].connection != arrivals[1].connection
    assert write.text == f"POST /order on connection {arrivals[1].connection}"


def test_a_connection_still_fresh_is_reused(default_stack: Stack, world: ExpiringUpstream) -> None:
    read, write = _read_then_write(default_stack, world, quiet=False)
    assert (read.status_code, write.status_code) == (200, 200)
    first, second = world.state.seen()
    assert first.connection == second.connection  # no new connection per call


def test_reusing_a_quiet_connection_loses_the_write(
    reusing_stack: Stack, world: ExpiringUpstream
) -> None:
    """What the option prevents: the same calls with reuse at any age. The world got the write
    and closed on it, and the worker got no answer of the world's (and cannot know whether the
    order was placed)."""
    _, write = _read_then_write(reusing_stack, world, quiet=True)
    assert write.status_code == 502
    assert write.headers["X-Groundhog-Decision"] == "upstream-failed"
    arrivals = world.state.seen()
    assert [(a.method, a.answered) for a in arrivals] == [("GET", True), ("POST", False)]
    assert arrivals[0].connection == arrivals[1].connection
