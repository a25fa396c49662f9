"""The agent: its strategies' calls, its deterministic reward, and its own randomness."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from worldsim import agent
from worldsim.agent import AgentError, Reply, Strategy, choose_strategy, run_rollout
from worldsim.simulate import InProcessTransport, live_rollout
from worldsim.world import World

CALLS = {Strategy.GUESS: 3, Strategy.SKIM: 5, Strategy.DEEP: 7, Strategy.VERIFY: 9}


@pytest.mark.parametrize("strategy", list(Strategy))
def test_each_strategy_makes_its_calls_and_is_deterministic(strategy: Strategy) -> None:
    first = live_rollout(7, strategy, agent_seed=3)
    assert first == live_rollout(7, strategy, agent_seed=3)
    assert len(first.steps) == CALLS[strategy]
    assert first.doc_id == f"brief-{first.topic}"
    assert first.reward == (
        first.quality + first.attention - first.latency_cost + first.revision_gain
    )
    assert first.latency_cost == pytest.approx(
        agent.LATENCY_COST_PER_SECOND * sum(step.latency_ms for step in first.steps) / 1000
    )


def test_the_agent_seed_moves_only_the_agents_own_noise() -> None:
    one, other = live_rollout(7, Strategy.DEEP, 1), live_rollout(7, Strategy.DEEP, 2)
    assert one.writing_noise != other.writing_noise
    assert one.steps == other.steps and one.attention == other.attention
    assert one.reward - other.reward == pytest.approx(one.writing_noise - other.writing_noise)


def test_verify_earns_its_gain_only_when_it_sees_its_own_write() -> None:
    honest = live_rollout(7, Strategy.VERIFY, 1)
    assert honest.review_exists is True and honest.revision_gain > 0
    assert [step.method for step in honest.steps].count("POST") == 2
    world = World(7)
    lying = run_rollout(
        InProcessTransport(world, branch="root/b0", read_branch="probe"),
        Strategy.VERIFY,
        1,
        open_session=False,
    )
    assert lying.saw_own_write is False and lying.revision_gain == 0.0
    assert lying.reward < honest.reward
    assert honest.reward - lying.reward == pytest.approx(
        honest.revision_gain - (honest.latency_cost - lying.latency_cost)
    )


def test_strategy_names_are_checked() -> None:
    assert agent.parse_strategy("deep") is Strategy.DEEP
    with pytest.raises(ValueError, match="guess, skim, deep, verify"):
        agent.parse_strategy("bold")


def test_choose_strategy_is_keyed_by_the_agent_seed() -> None:
    weights = {Strategy.GUESS: 0.0, Strategy.DEEP: 1.0, Strategy.VERIFY: 3.0}
    picks = Counter(choose_strategy(weights, agent_seed=seed) for seed in range(2000))
    assert set(picks) == {Strategy.DEEP, Strategy.VERIFY}
    assert 0.7 < picks[Strategy.VERIFY] / 2000 < 0.8
    assert choose_strategy(weights, 5, draw=1) == choose_strategy(weights, 5, draw=1)
    with pytest.raises(ValueError, match="non-negative"):
        choose_strategy({Strategy.DEEP: -1.0}, 1)


class FailingTransport:
    def send(self, method, path, params, body, headers=None) -> Reply:
        return Reply(502, {"content-type": "application/problem+json"}, b'{"status":502}')


def test_an_unusable_answer_stops_the_rollout_loudly() -> None:
    with pytest.raises(AgentError, match="answered 502"):
        run_rollout(FailingTransport(), Strategy.GUESS, 1)


class _ProxiedClient:
    """An HTTP client whose answers carry the proxy's decision header, spelled as on the wire."""

    def __init__(self, inner: InProcessTransport) -> None:
        self.inner = inner

    def request(self, method: str, url: str, *, params, headers, content):
        path = url.removeprefix("http://world")
        reply = self.inner.send(method, path, params or (), content, headers)
        wire_headers = {name.title(): value for name, value in reply.headers.items()}
        wire_headers["X-Groundhog-Decision"] = "shared" if method == "GET" else "recorded"
        return SimpleNamespace(status_code=reply.status, headers=wire_headers, content=reply.body)


def test_each_step_keeps_the_decision_the_proxy_announced() -> None:
    client = _ProxiedClient(InProcessTransport(World(7), branch="live"))
    transport = agent.HttpTransport(client, "http://world")
    rollout = run_rollout(transport, Strategy.SKIM, 1, open_session=False)
    decisions = {(step.method, step.decision) for step in rollout.steps}
    assert decisions == {("GET", "shared"), ("POST", "recorded")}
