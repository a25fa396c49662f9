"""Fixtures for resolver tests: one real resolver process per session, a fresh tape per test."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from store.db import Store
from tests.resolver.proxy_double import ProxyDouble, World
from tests.resolver.test_hit_path import open_with_tape
from tests.support.servers import ServerProcess, running_server
from tests.support.store_databases import private_schema_url

_names = itertools.count()


@pytest.fixture(scope="session")
def resolver_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data: Path = tmp_path_factory.mktemp("resolver-data")
    with running_server(["resolver", "--data", str(data)]) as server:
        yield server


@pytest.fixture(scope="session")
def tight_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A resolver with small limits: 1000-byte bodies, half a second of single-flight waiting."""
    data: Path = tmp_path_factory.mktemp("tight-resolver-data")
    env = {"GROUNDHOG_MAX_BODY_BYTES": "1000", "GROUNDHOG_RESOLVE_WAIT_SECONDS": "0.5"}
    with running_server(["resolver", "--data", str(data)], env=env) as server:
        yield server


@pytest.fixture
def proxy(resolver_server: ServerProcess) -> Iterator[ProxyDouble]:
    double = ProxyDouble(resolver_server.url, World())
    yield double
    double.http.close()


@pytest.fixture
def tape_name(request: pytest.FixtureRequest) -> str:
    return f"t{next(_names)}-" + re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:60]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_args(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    """`python -m resolver` arguments for a fresh store on SQLite or on PostgreSQL."""
    arguments = ["--data", str(tmp_path)]
    if request.param == "sqlite":
        yield arguments
        return
    with private_schema_url(request.getfixturevalue("postgres_url")) as url:
        yield [*arguments, "--database-url", url]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A SQLite store holding tape `t` with branches root/a, root/b and root/c, for the tests
    that drive the Resolver in process (tests/resolver/test_hit_path.open_with_tape)."""
    opened = open_with_tape(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    yield opened
    opened.dispose()
