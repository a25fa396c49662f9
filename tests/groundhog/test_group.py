"""GroupRunner: a fork group whose shared noise cancels exactly in the advantages."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from groundhog.branch import Branch
from groundhog.client import Groundhog
from groundhog.group import GroupRunner, RolloutError, advantages
from groundhog.shim import agent_rng, current, shim
from tests.groundhog.upstream import Upstream

EFFECT = {"root/b0": 0.0, "root/b1": 1.0, "root/b2": 2.0, "root/b3": 5.0}


def test_advantages_are_rewards_minus_their_mean() -> None:
    assert advantages([1.0, 2.0, 6.0]) == [-2.0, -1.0, 3.0]
    assert advantages([]) == []


def test_sync_group_shares_world_noise_so_it_cancels(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=17)
    url = f"{http_upstream.url}/shock/{tape_name}"
    seen: dict[str, tuple[float, float, float]] = {}

    def rollout(branch: Branch) -> float:
        with branch.client() as client:
            shock = json.loads(client.get(url).text)["serial"] * 3.7  # exogenous, from the world
        world = random.random() * 10  # exogenous, from the process
        elapsed = time.monotonic()
        seen[branch.path] = (shock, world, agent_rng().random())
        assert current() is not None and current().branch == branch.path
        return shock + world + elapsed + EFFECT[branch.path]

    result = GroupRunner(tape, size=4).run(rollout)
    assert [branch.path for branch in result.branches] == list(EFFECT)
    mean_effect = sum(EFFECT.values()) / 4
    assert result.advantages == pytest.approx([EFFECT[p] - mean_effect for p in EFFECT], abs=1e-9)
    assert len({values[:2] for values in seen.values()}) == 1, "same shock and draws everywhere"
    assert len({values[2] for values in seen.values()}) == 4, "agent noise differs per branch"
    assert http_upstream.count(f"/shock/{tape_name}") == 1
    assert current() is None


def test_async_group_runs_with_gather_and_resumes_parent_counters(
    gh_proxied: Groundhog, tape_name: str, https_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=23)
    url = f"{https_upstream.url}/async/{tape_name}"
    firsts: dict[str, float] = {}

    async def rollout(branch: Branch) -> float:
        firsts[branch.path] = random.random()
        await asyncio.sleep(10 * EFFECT[branch.path])  # virtual; interleaves the branches
        async with branch.async_client() as client:
            response = await client.get(url)
        shock = json.loads(response.text)["serial"]
        return shock + random.gauss(0, 1) + EFFECT[branch.path]

    with shim(world_seed=23, branch="root"):
        random.random()
        expected_first = random.random()
        # The parent's state at the fork is handed on, so children continue its sequence.
        random.seed(None)
        result = asyncio.run(_in_task(GroupRunner(tape, size=4), rollout, rewind=1))
    assert set(firsts.values()) == {expected_first}
    mean_effect = sum(EFFECT.values()) / 4
    assert result.advantages == pytest.approx([EFFECT[p] - mean_effect for p in EFFECT], abs=1e-9)
    stored = tape.branch("root/b2").info().shim_counters
    assert stored["occurrences"]["random.random"] == 1
    assert https_upstream.count(f"/async/{tape_name}") == 1


async def _in_task(runner: GroupRunner, rollout, *, rewind: int):  # type: ignore[no-untyped-def]
    """Fork from a context whose counters stand `rewind` draws back, as a parent would."""
    state = current()
    assert state is not None
    counters = state.counters()
    counters["occurrences"]["random.random"] -= rewind
    with shim(world_seed=state.world_seed, branch="root", counters=counters):
        return await runner.arun(rollout)


def test_a_rollout_without_a_number_names_its_branch(gh: Groundhog, tape_name: str) -> None:
    tape = gh.open(tape_name, world_seed=1)
    with pytest.raises(RolloutError, match=r"root/b1.*'bad'"):
        GroupRunner(tape, size=2).run(lambda branch: "bad" if branch.path == "root/b1" else 1.0)
    with pytest.raises(RolloutError, match="non-finite"):
        GroupRunner(tape, size=1).run(lambda branch: float("nan"))
    with pytest.raises(ValueError, match="at least one"):
        GroupRunner(tape, size=0)
