"""Fixtures for the world's tests: an in-process app client and real server processes."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

with warnings.catch_warnings():
    # Starlette 1.x flags its httpx-based TestClient as deprecated; it still works as before.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from tests.support.servers import ServerProcess, start_server
from worldsim.app import create_app
from worldsim.config import load_config


@pytest.fixture
def client() -> Iterator[TestClient]:
    """The world app in process (seed 7), for contract tests that need no TCP."""
    with TestClient(create_app(load_config(seed=7, sandbox_cap=8, max_body_bytes=4096))) as test:
        yield test


@pytest.fixture(scope="module")
def world_server() -> Iterator[ServerProcess]:
    """A real world server process with seed 7."""
    server = start_server(["worldsim", "--seed", "7"])
    try:
        yield server
    finally:
        server.stop()
