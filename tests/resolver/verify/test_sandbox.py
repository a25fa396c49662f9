"""The closed world counts every connection at the socket; a live attempt fails the verdict."""

from __future__ import annotations

import os
import socket

import pytest

from resolver.verify.replay import BranchSummary
from resolver.verify.run import VerifyReport
from resolver.verify.sandbox import ClosedWorld, private_environment
from tests.support.servers import wait_until


def test_the_closed_world_counts_and_closes_every_connection() -> None:
    world = ClosedWorld()
    try:
        assert world.connections == 0
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", world.port), timeout=5) as connection:
                connection.settimeout(5)
                assert connection.recv(1) == b""  # closed by the world, nothing relayed
        wait_until(lambda: world.connections == 2, what="both connections counted")
    finally:
        world.close()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", world.port), timeout=5):
        pass


def test_a_live_attempt_fails_a_run_whose_branches_all_matched() -> None:
    report = VerifyReport("t", branches=[BranchSummary("root", asks=1, replayed=1, matched=1)])
    assert report.ok
    report.live_connections = 1
    assert not report.ok and report.as_json()["ok"] is False


def test_the_private_servers_get_none_of_the_callers_groundhog_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROUNDHOG_DATABASE_URL", "postgresql+psycopg://elsewhere/db")
    monkeypatch.setenv("GROUNDHOG_ADMIN_TOKEN", "secret")
    environment = private_environment()
    assert not any(name.startswith("GROUNDHOG_") for name in environment)
    assert environment.get("PATH") == os.environ.get("PATH")
