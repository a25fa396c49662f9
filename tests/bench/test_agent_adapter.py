"""Unit tests of bench/agent_adapter.py: outcomes, the HTTP run and the prefix probe.

The world runs in process (Starlette's TestClient is an `httpx.Client`), so no server starts.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator

import pytest

from bench import agent_adapter
from worldsim import agent
from worldsim.app import create_app
from worldsim.config import load_config

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

BASE = "http://testserver"


@pytest.fixture
def world() -> Iterator[TestClient]:
    with TestClient(create_app(load_config(seed=7))) as client:
        yield client


def _stats(world: TestClient) -> dict[str, object]:
    return world.get("/_stats").json()


def test_run_returns_the_agents_own_result(world: TestClient) -> None:
    headers = {"X-Groundhog-Branch": "root/a"}
    got = agent_adapter.run(world, BASE, headers, "verify", 11)
    world.post("/_reset")
    direct = agent.run_rollout(agent.HttpTransport(world, BASE, headers), "verify", 11)
    assert got.observation_digest == agent_adapter.outcome(direct).observation_digest
    assert got.reward == direct.reward and got.attention == direct.attention
    assert got.saw_own_write is True
    assert got.decisions == tuple(step.decision for step in direct.steps)
    assert len(got.observation_digest) == 64


def test_the_digest_ignores_how_groundhog_served_each_reply(world: TestClient) -> None:
    rollout = agent.run_rollout(agent.HttpTransport(world, BASE, {}), "deep", 3)
    relabelled = dataclasses.replace(
        rollout, steps=tuple(dataclasses.replace(s, decision="shared") for s in rollout.steps)
    )
    plain, served = agent_adapter.outcome(rollout), agent_adapter.outcome(relabelled)
    assert plain.observation_digest == served.observation_digest
    assert set(served.decisions) == {"shared"} and plain.decisions != served.decisions
    changed = dataclasses.replace(rollout, reward=rollout.reward + 1.0)
    assert agent_adapter.outcome(changed).observation_digest != plain.observation_digest


def test_different_strategies_or_seeds_give_different_digests(world: TestClient) -> None:
    first = agent_adapter.run(world, BASE, {"X-Groundhog-Branch": "root/a"}, "skim", 1)
    second = agent_adapter.run(world, BASE, {"X-Groundhog-Branch": "root/b"}, "deep", 1)
    assert first.observation_digest != second.observation_digest
    assert first.saw_own_write is None


def test_probe_transport_answers_writes_locally(world: TestClient) -> None:
    probe = agent_adapter.ProbeTransport(agent.HttpTransport(world, BASE, {}))
    reply = probe.send("POST", "/docs", [], b'{"id": "brief-x", "topic": "wind"}')
    assert reply.status == 201
    assert reply.json() == {"id": "brief-x", "revision": 1, "terms": []}
    assert reply.headers[agent.LATENCY_HEADER] == agent_adapter.PROBE_WRITE_LATENCY
    assert _stats(world)["total"] == 0  # nothing reached the world
    read = probe.send("GET", "/docs/d01", [], None)
    assert read.status == 200 and read.json()["id"] == "d01"
    assert _stats(world)["total"] == 1


def test_run_probe_makes_verifys_reads_and_no_write(world: TestClient) -> None:
    agent_adapter.run_probe(world, BASE, 5, epoch=3, client_key="probe")
    endpoints = _stats(world)["endpoints"]
    assert isinstance(endpoints, dict) and endpoints
    assert "POST /docs" not in endpoints
    # The probe's own session is real (its reads need a sandbox); its writes are not.
    assert endpoints["POST /sessions"] == 1
    assert "GET /review" in endpoints


def test_the_digest_ignores_the_session_token(world: TestClient) -> None:
    first = agent.run_rollout(agent.HttpTransport(world, BASE, {}), "deep", 3, epoch=4)
    second = agent.run_rollout(agent.HttpTransport(world, BASE, {}), "deep", 3, epoch=4)
    assert first.session != second.session
    assert agent_adapter.outcome(first).observation_digest == (
        agent_adapter.outcome(second).observation_digest
    )


def test_attention_coefficient(monkeypatch: pytest.MonkeyPatch) -> None:
    assert agent_adapter.attention_coefficient() == float(agent.ATTENTION_COEFFICIENT)
    monkeypatch.delattr(agent, "ATTENTION_COEFFICIENT")
    assert agent_adapter.attention_coefficient() is None
