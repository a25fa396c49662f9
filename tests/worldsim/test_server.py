"""The world as a real server process: determinism across processes, rollouts over HTTP."""

from __future__ import annotations

import statistics
import subprocess
import sys
from dataclasses import replace

import httpx
import pytest
import requests

from tests.support.servers import ServerProcess, running_server
from worldsim.agent import Strategy, http_rollout
from worldsim.simulate import live_rollout

SCRIPT: list[tuple[str, str, dict, dict | None]] = [
    ("GET", "/context", {}, None),
    ("GET", "/context", {}, None),
    ("GET", "/trends", {}, None),
    ("GET", "/search", {"q": "battery"}, None),
    ("GET", "/docs/d11", {}, None),
    ("GET", "/review", {"doc": "brief-battery"}, None),
    ("POST", "/docs", {}, {"topic": "battery", "title": "Battery brief", "sources": ["d11"]}),
    ("GET", "/review", {"doc": "brief-battery"}, None),
    ("GET", "/search", {"q": "battery"}, None),
    ("GET", "/docs/brief-battery", {}, None),
    ("GET", "/docs/nope", {}, None),
]


def play(url: str, headers: dict[str, str]) -> list[tuple[int, list[tuple[str, str]], bytes]]:
    answers = []
    with httpx.Client(base_url=url, headers=headers, trust_env=False) as client:
        client.post("/_reset")
        for method, path, params, body in SCRIPT:
            response = client.request(method, path, params=params, json=body)
            answers.append((response.status_code, list(response.headers.items()), response.content))
    return answers


def test_two_processes_with_one_seed_answer_the_same_bytes(world_server: ServerProcess) -> None:
    with running_server(["worldsim", "--seed", "7"]) as twin:
        for branch in ("root", "root/b3"):
            first = play(world_server.url, {"X-Groundhog-Branch": branch})
            assert first == play(twin.url, {"X-Groundhog-Branch": branch})
    assert all(name.lower() not in ("date", "server") for name, _ in first[0][1])


def test_the_seed_header_selects_the_world(world_server: ServerProcess) -> None:
    with running_server(["worldsim", "--seed", "8"]) as other:
        assert play(other.url, {}) != play(world_server.url, {})
        assert play(other.url, {"X-Groundhog-Seed": "7"}) == play(world_server.url, {})


def test_http_rollouts_rank_the_strategies_and_equal_in_process_ones(
    world_server: ServerProcess,
) -> None:
    rewards: dict[Strategy, list[float]] = {strategy: [] for strategy in Strategy}
    with httpx.Client(trust_env=False) as client:
        client.post(f"{world_server.url}/_reset")
        client.post(f"{world_server.url}/_stats/reset")
        for world_seed in range(40):
            for strategy in Strategy:
                headers = {
                    "X-Groundhog-Seed": str(world_seed),
                    "X-Groundhog-Branch": f"w{world_seed}/{strategy}",
                }
                rollout = http_rollout(
                    client, world_server.url, strategy, world_seed, headers, epoch=world_seed
                )
                assert rollout.session is not None
                assert replace(rollout, session=None) == live_rollout(
                    world_seed, strategy, world_seed
                )
                rewards[strategy].append(rollout.reward)
        # 24 calls of the four strategies plus one session each.
        assert client.get(f"{world_server.url}/_stats").json()["total"] == 40 * (24 + 4)
    means = {strategy: statistics.fmean(values) for strategy, values in rewards.items()}
    assert (
        means[Strategy.VERIFY] > means[Strategy.DEEP] > means[Strategy.SKIM] > means[Strategy.GUESS]
    )


def test_a_requests_session_works_as_the_client(world_server: ServerProcess) -> None:
    with requests.Session() as session:
        session.trust_env = False
        session.post(f"{world_server.url}/_reset")
        rollout = http_rollout(
            session, world_server.url, "verify", 5, {"X-Groundhog-Branch": "session"}
        )
    assert replace(rollout, session=None) == live_rollout(7, Strategy.VERIFY, 5)
    assert rollout.saw_own_write is True


def test_attention_over_http_is_about_nine_times_the_gap(world_server: ServerProcess) -> None:
    with httpx.Client(base_url=world_server.url, trust_env=False) as client:
        client.post("/_reset")
        shocks = [
            client.get("/context", headers={"X-Groundhog-Seed": str(seed)}).json()["attention"]
            for seed in range(300)
        ]
    gap = 0.16  # the in-process calibration (test_calibration.py) pins the gap near this
    assert statistics.pstdev(shocks) / gap == pytest.approx(9, rel=0.2)
    assert abs(statistics.fmean(shocks)) < 0.3


def test_cli_flags_turn_hints_off_and_cap_sandboxes() -> None:
    flags = ["--seed", "1", "--no-hints", "--sandbox-cap", "1"]
    with (
        running_server(["worldsim", *flags]) as world,
        httpx.Client(base_url=world.url, trust_env=False) as client,
    ):
        first = client.get("/context")
        assert first.status_code == 200 and "x-groundhog-reads" not in first.headers
        refused = client.get("/context", headers={"X-Groundhog-Branch": "other"})
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"


def test_an_invalid_flag_exits_with_a_message_naming_it() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "worldsim", "--sandbox-cap", "0", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode != 0
    assert "--sandbox-cap: Input should be greater than or equal to 1" in finished.stderr
