"""Run the real agent against the world in process: a fast live reference and calibration.

Over HTTP a rollout costs milliseconds; calibrating the world (the shock is about nine times
the verify-deep gap, the variance ratio the benchmark should find) needs thousands of worlds.
These transports call `World.handle` directly, so they produce the very bytes the server would,
and they emulate the three benchmark conditions the way the resolver does: `naive` salts the
noise seed by branch, `groundhog` shares the seed and lets each branch read its own sandbox,
`replay` serves every read as recorded before any branch wrote (the world lies).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from worldsim import noise
from worldsim.agent import Reply, Rollout, Strategy, run_rollout
from worldsim.dispatch import bearer
from worldsim.errors import WorldError
from worldsim.render import encode
from worldsim.world import World, WorldRequest

PROBE_BRANCH = "probe"


class Condition(StrEnum):
    NAIVE = "naive"
    REPLAY = "replay"
    GROUNDHOG = "groundhog"


class InProcessTransport:
    """Calls a `World` directly, as the cooperative headers of a live call would select it."""

    def __init__(
        self,
        world: World,
        *,
        branch: str = "root",
        seed: int | None = None,
        read_branch: str | None = None,
    ) -> None:
        self.world = world
        self.branch = branch
        self.seed = seed
        # Reads go to `read_branch` (a sandbox nobody writes) to emulate a replay that lies.
        self.read_branch = read_branch
        self._occurrences: Counter[tuple[str, str, bytes]] = Counter()

    def send(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        query = tuple(params)
        payload = body or b""
        branch = self.branch
        occurrence: str | None = None
        if self.read_branch is not None and method == "GET":
            branch = self.read_branch
            lineage_key = (path, encode(sorted(query)).decode(), payload)
            occurrence = str(self._occurrences[lineage_key])
            self._occurrences[lineage_key] += 1
        request = WorldRequest(
            method=method,
            path=path,
            query=query,
            body=payload,
            branch=branch,
            seed=None if self.seed is None else str(self.seed),
            occurrence=occurrence,
            session=bearer((headers or {}).get("Authorization")),
        )
        try:
            answer = self.world.handle(request)
        except WorldError as error:
            return Reply(error.status, {}, encode(error.problem()))
        headers = {name.lower(): value for name, value in answer.headers}
        return Reply(answer.status, headers, answer.body)


@dataclass(frozen=True)
class Group:
    """One fork group in one world: one rollout per strategy."""

    world_seed: int
    condition: Condition
    rollouts: Mapping[Strategy, Rollout]

    def contrast(self, better: Strategy = Strategy.VERIFY, worse: Strategy = Strategy.DEEP):
        """The advantage contrast a_better - a_worse (the group mean cancels)."""
        return self.rollouts[better].reward - self.rollouts[worse].reward


def agent_seed_for(world_seed: int, strategy: Strategy, salt: int = 0) -> int:
    """Exploration noise per branch: each branch of a group has its own agent seed."""
    return noise.salted_seed(world_seed, f"agent:{strategy}:{salt}")


def live_rollout(world_seed: int, strategy: Strategy, agent_seed: int) -> Rollout:
    """A rollout against a fresh live world with `world_seed`: the reference for equivalence."""
    world = World(world_seed)
    transport = InProcessTransport(world, branch="live")
    return run_rollout(transport, strategy, agent_seed, open_session=False)


def run_group(
    world_seed: int,
    condition: Condition,
    strategies: Sequence[Strategy] = tuple(Strategy),
    salt: int = 0,
) -> Group:
    """Run one group of branches under a condition, as the resolver would serve them."""
    world = World(world_seed, sandbox_cap=len(strategies) + 2)
    rollouts: dict[Strategy, Rollout] = {}
    for index, strategy in enumerate(strategies):
        transport = transport_for(world, condition, f"root/b{index}", world_seed)
        rollouts[strategy] = run_rollout(
            transport, strategy, agent_seed_for(world_seed, strategy, salt), open_session=False
        )
    return Group(world_seed, condition, rollouts)


def transport_for(
    world: World, condition: Condition, branch: str, world_seed: int
) -> InProcessTransport:
    """Branch ``branch``'s calls to ``world`` as ``condition`` serves them."""
    if condition is Condition.NAIVE:
        seed = noise.salted_seed(world_seed, f"naive:{branch}")
        return InProcessTransport(world, branch=branch, seed=seed)
    if condition is Condition.REPLAY:
        return InProcessTransport(world, branch=branch, read_branch=PROBE_BRANCH)
    return InProcessTransport(world, branch=branch)
