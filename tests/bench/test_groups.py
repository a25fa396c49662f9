"""Unit tests of bench/groups.py: seeds, context, the live run and a group's bookkeeping.

The full proxied path is exercised in tests/bench/test_end_to_end.py; here the admin client
and world control are recording doubles, and the world is a real worldsim on loopback.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from bench.groups import Grader, RunContext, agent_seed, proxied_client, run_group, run_live
from groundhog.models import ForkResult
from groundhog.protocol import headers as protocol_headers
from tests.support.servers import ServerProcess, running_server
from worldsim import agent


class AdminDouble:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def open_tape(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("open_tape", args, kwargs))

    def fork(self, tape: str, parent: str, names: list[str], **kwargs: Any) -> ForkResult:
        self.calls.append(("fork", (tape, parent, names), kwargs))
        return ForkResult(parent, [f"{parent}/{name}" for name in names])


class WorldDouble:
    def __init__(self) -> None:
        self.dropped: list[list[str]] = []

    def drop_sandboxes(self, branches: list[str]) -> None:
        self.dropped.append(list(branches))


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _context(world_url: str, proxy_url: str = "http://127.0.0.1:9") -> RunContext:
    return RunContext(
        admin=AdminDouble(),  # type: ignore[arg-type]
        world=WorldDouble(),  # type: ignore[arg-type]
        world_url=world_url,
        proxy_url=proxy_url,
        run_id="r1",
    )


@pytest.fixture(scope="module")
def world() -> Iterator[ServerProcess]:
    with running_server(["worldsim", "--seed", "7"]) as server:
        yield server


def test_agent_seeds_are_distinct_and_reproducible() -> None:
    assert agent_seed(7, 1000, 2) == 7 * 1_000_003 + 1000 * 64 + 2
    seeds = {agent_seed(7, world, index) for world in range(1000, 1010) for index in range(5)}
    assert len(seeds) == 50


def test_world_host_is_the_world_urls_host() -> None:
    assert _context("http://127.0.0.1:8090/").world_host == "127.0.0.1"
    assert _context("http://World.Local:1").world_host == "world.local"


def test_proxied_client_names_tape_and_branch_and_hooks() -> None:
    seen: list[str] = []
    context = _context("http://127.0.0.1:1")
    with proxied_client(context, "t", "root/b0", [seen.append], [seen.append]) as client:
        assert client.headers[protocol_headers.TAPE] == "t"
        assert client.headers[protocol_headers.BRANCH] == "root/b0"
        assert client.response_hooks == [seen.append]
        assert client.request_hooks == [seen.append]
        assert client.timeout == 120.0
        assert str(client.route.proxy) == context.proxy_url
    with proxied_client(context, "t", "root", []) as client:
        assert client.request_hooks == []
        assert client.pool is context.connections  # the cell's rollouts share connections


def test_run_live_talks_to_the_world_and_drops_the_sandbox(world: ServerProcess) -> None:
    context = _context(world.url)
    got = run_live(context, world_seed=11, client_key="live-11-0", strategy="verify", seed=3)
    headers = {"X-Groundhog-Seed": "11"}
    with httpx.Client(trust_env=False) as client:
        transport = agent.HttpTransport(client, world.url, headers)
        direct = agent.run_rollout(transport, "verify", 3, epoch=11, client="other")
    assert got.reward == direct.reward and got.attention == direct.attention
    [dropped] = context.world.dropped  # type: ignore[attr-defined]
    assert len(dropped) == 1 and dropped[0].startswith("s-")


def test_run_live_drops_the_sandbox_even_when_the_rollout_fails(world: ServerProcess) -> None:
    context = _context(world.url)
    with pytest.raises(ValueError):
        run_live(context, world_seed=1, client_key="live-x", strategy="teleport", seed=0)
    assert context.world.dropped == [[]]  # type: ignore[attr-defined]


def test_run_group_opens_forks_and_always_drops_its_sandboxes() -> None:
    context = _context("http://127.0.0.1:8090", proxy_url=_closed_port_url())
    with pytest.raises(httpx.TransportError):
        run_group(
            context,
            tape="tape-1",
            world_seed=5,
            mode="groundhog",
            dependency_model="rules",
            strategies=["guess", "verify"],
            seed_base=7,
            probe=True,
            rules=[{"method": "GET", "path": "/x"}],
            branch_label="lbl",
        )
    admin_calls = context.admin.calls  # type: ignore[attr-defined]
    assert admin_calls[0] == (
        "open_tape",
        ("tape-1", 5),
        {
            "mode": "groundhog",
            "dependency_model": "rules",
            "cooperative_hosts": ["127.0.0.1"],
            "rules": [{"method": "GET", "path": "/x"}],
        },
    )
    names = ["lbl-0-guess", "lbl-1-verify", "lbl-probe"]
    assert admin_calls[1] == ("fork", ("tape-1", "root", names), {"shim_counters": None})
    # The probe failed before it obtained a session: nothing to drop, and the drop still ran.
    assert context.world.dropped == [[]]  # type: ignore[attr-defined]


def test_an_uncooperative_tape_names_no_cooperative_host() -> None:
    context = replace(
        _context("http://127.0.0.1:8090", proxy_url=_closed_port_url()),
        cooperative=False,
        credential_settings={"interchangeable_credentials": ["127.0.0.1"]},
    )
    with pytest.raises(httpx.TransportError):
        run_group(
            context,
            tape="t",
            world_seed=1,
            mode="groundhog",
            dependency_model="rules",
            strategies=["deep"],
            seed_base=7,
            probe=False,
            branch_label="u",
        )
    _, _, options = context.admin.calls[0]  # type: ignore[attr-defined]
    assert options["cooperative_hosts"] == []
    assert options["interchangeable_credentials"] == ["127.0.0.1"]


class _OracleDouble:
    """Grades a read stale once the sandbox has been written (what the world's oracle does
    for a read whose answer the write changed), and logs each batch it was asked."""

    def __init__(self) -> None:
        self.sandbox_written = False
        self.batches: list[list[str]] = []

    def grade(self, reads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.batches.append([read["request_id"] for read in reads])
        return [{"stale": self.sandbox_written, "changed": True} for _ in reads]


def _served(method: str, path: str, status: int, **headers: str) -> httpx.Response:
    request = httpx.Request(method, f"http://world.test{path}")
    body = b'{"session": "s-1"}' if path == "/sessions" else b"{}"
    return httpx.Response(status, headers=headers, content=body, request=request)


def test_the_grader_grades_reads_in_batches_before_each_write_against_the_state_they_saw() -> None:
    oracle = _OracleDouble()
    grader = Grader(oracle, enabled=True)  # type: ignore[arg-type]
    grader(_served("POST", "/sessions", 201))
    for rid in ("r1", "r2"):
        grader(_served("GET", "/search", 200, **{"x-request-id": rid}))
    assert oracle.batches == []  # nothing graded while no write is pending
    grader.before_request(httpx.Request("POST", "http://world.test/docs"))
    oracle.sandbox_written = True  # the write lands only after the reads were graded
    grader(_served("POST", "/docs", 201))
    grader(
        _served("GET", "/review", 200, **{"x-request-id": "r3", protocol_headers.FINGERPRINT: "f"})
    )
    grader.before_request(httpx.Request("GET", "http://world.test/review"))  # not a write
    grader.flush()
    grader.flush()  # nothing left: no empty batch
    assert oracle.batches == [["r1", "r2"], ["r3"]]
    grades = grader.grades
    assert (grades.reads, grades.stale) == (3, 1)
    assert (grades.reads_after_write, grades.stale_after_write) == (1, 1)
    assert grades.pairs == [(True, True)]
