"""Unit tests of bench/world_client.py against a real world server on loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from bench.world_client import WorldControl, WorldControlError
from tests.support.servers import ServerProcess, running_server

BRIEF = {"id": "brief-wind", "topic": "wind", "title": "Wind brief", "sources": ["d06"]}


@pytest.fixture(scope="module")
def world() -> Iterator[ServerProcess]:
    with running_server(["worldsim", "--seed", "7"]) as server:
        yield server


@pytest.fixture
def control(world: ServerProcess) -> Iterator[WorldControl]:
    with WorldControl(world.url) as client:
        for route in ("/_reset", "/_stats/reset"):
            httpx.post(world.url + route, trust_env=False).raise_for_status()
        yield client


def _get(world: ServerProcess, path: str, branch: str, **params: str) -> httpx.Response:
    return httpx.get(
        world.url + path, params=params, headers={"X-Groundhog-Branch": branch}, trust_env=False
    )


def test_calls_are_counted_per_branch(world: ServerProcess, control: WorldControl) -> None:
    assert control.total_calls() == 0 and control.calls_by_branch() == {}
    _get(world, "/context", "root/a")
    _get(world, "/context", "root/a")
    _get(world, "/search", "root/b", q="wind")
    assert control.total_calls() == 3
    assert control.calls_by_branch() == {"root/a": 2, "root/b": 1}


def test_drop_sandboxes_drops_only_the_named_ones(
    world: ServerProcess, control: WorldControl
) -> None:
    for branch in ("root/a", "root/b", "root/c"):
        _get(world, "/context", branch)
    control.drop_sandboxes(["root/a", "root/c", "root/never"])
    branches = httpx.get(world.url + "/_branches", trust_env=False).json()
    assert branches == {"branches": ["root/b"]}
    control.drop_sandboxes([])


def test_judge_reports_which_reads_a_write_changed(
    world: ServerProcess, control: WorldControl
) -> None:
    assert control.judge([]) == []
    published = httpx.post(
        world.url + "/docs", json=BRIEF, headers={"X-Groundhog-Branch": "root/w"}, trust_env=False
    )
    assert published.status_code == 201
    reads = [
        {"branch": "root/w", "path": "/docs/brief-wind"},
        {"branch": "root/w", "path": "/docs/d01"},
        {"branch": "root/other", "path": "/docs/brief-wind"},
    ]
    assert control.judge(reads) == [True, False, False]


def test_errors_name_the_route_and_status(control: WorldControl) -> None:
    with pytest.raises(WorldControlError, match=r"POST /_reset -> 422: .*not a branch path"):
        control.drop_sandboxes(["root/../x"])
    with pytest.raises(WorldControlError, match=r"POST /_oracle/batch -> 422"):
        control.judge([{"branch": "root", "method": "POST", "path": "/docs"}])


def test_an_unreachable_world_is_retried_then_named() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with WorldControl(url, timeout=2) as control, pytest.raises(WorldControlError) as raised:
        control.total_calls()
    assert "GET /_stats failed" in str(raised.value)
    assert isinstance(raised.value.__cause__, httpx.ConnectError)
