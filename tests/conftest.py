"""Suite-wide fixtures. Each package's own fixtures live in tests/<package>/conftest.py."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from tests.support.held_ports import DEFAULT_PORTS, held_ports, port_taken

POSTGRES_URL = os.environ.get(
    "GROUNDHOG_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def postgres_available() -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    try:
        with psycopg.connect(
            POSTGRES_URL.replace("postgresql+psycopg://", "postgresql://"), connect_timeout=2
        ):
            return True
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A PostgreSQL URL for SQLAlchemy, or a visible skip naming what is missing."""
    if not postgres_available():
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL} (set GROUNDHOG_TEST_POSTGRES_URL)")
    return POSTGRES_URL


_HELD_PORTS = pytest.StashKey[contextlib.ExitStack]()


def pytest_configure(config: pytest.Config) -> None:
    """With GROUNDHOG_TEST_HOLD_DEFAULT_PORTS=1 (.ci/run sets it) the run holds 8070/8080/8090.

    That is the suite beside a running `make up`: any test leaning on a default port fails.
    Off by default so a developer's run does not take the ports from their own `make up`.
    Held by the process that outlives the run (pytest-xdist's controller, or the only one), so
    a worker that finishes early does not free them under another still running.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # xdist hands workers COLUMNS=80: rich's module-level consoles would freeze at 80
        # columns on import, whatever width a CLI test asks for.
        os.environ.pop("COLUMNS", None)
        return
    if os.environ.get("GROUNDHOG_TEST_HOLD_DEFAULT_PORTS") != "1":
        return
    holding = contextlib.ExitStack()
    holding.enter_context(held_ports())
    config.stash[_HELD_PORTS] = holding


def pytest_unconfigure(config: pytest.Config) -> None:
    holding = config.stash.get(_HELD_PORTS, None)
    if holding is not None:
        holding.close()


@pytest.fixture
def default_ports_taken() -> Iterator[list[int]]:
    """8070/8080/8090 held (or already held by someone) for this test: `make up` is running."""
    with held_ports() as held:
        assert all(port_taken(port) for port in DEFAULT_PORTS)
        yield held
