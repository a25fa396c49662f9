"""Fixtures for the proxy's tests: upstream servers, certificates, the real resolver and proxy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream
from tests.proxy.websocket_world import World, serving_world
from tests.support.certs import write_self_signed
from tests.support.servers import ServerProcess, start_server
from tests.support.store_databases import private_schema_url


@pytest.fixture(scope="session")
def upstream_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_self_signed(
        tmp_path_factory.mktemp("upstream-cert"), ["localhost", "127.0.0.1", "127.0.0.2"]
    )


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream(name="plain") as server:
        yield server


@pytest.fixture
def world() -> Iterator[World]:
    """A WebSocket world on loopback (tests/proxy/websocket_world.py), stopped after the test."""
    with serving_world() as running:
        yield running


@pytest.fixture
def tls_upstream(upstream_cert: tuple[Path, Path]) -> Iterator[Upstream]:
    with Upstream(name="tls", cert=upstream_cert) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_ambient_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy set in the developer's shell must not reroute the tests' own clients."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        if name in os.environ:
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def resolver_args(request: pytest.FixtureRequest) -> Iterator[tuple[str, ...]]:
    """The resolver's flags for a store of each kind: its own SQLite file, or a private schema
    of the test PostgreSQL."""
    if request.param == "sqlite":
        yield ()
        return
    with private_schema_url(request.getfixturevalue("postgres_url")) as url:
        yield ("--database-url", url)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One real resolver and one real proxy shared by a test module (tapes keep tests apart)."""
    with running_stack(
        tmp_path_factory.mktemp("groundhog-data"), "--max-body-bytes", "100000"
    ) as s:
        yield s


@pytest.fixture(scope="module")
def mcp_world() -> Iterator[ServerProcess]:
    """The MCP tool server (tests/proxy/mcp_world.py), one per test module."""
    server = start_server(["tests.proxy.mcp_world"], health_path="/calls")
    try:
        yield server
    finally:
        server.stop()
