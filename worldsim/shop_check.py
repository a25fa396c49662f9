"""The shop's four strategies run in process: reward tables for the protocol's GRPO sizes.

Protocol version 6 gave the shop a fourth strategy (`coupon`) so its groups have four branches;
the shop's GRPO claim (SG1) is sized by training the cached-table learner on per-day reward
tables, and the version-1 run's tables have only three columns. This runs the real shop agent
against the uncooperative shop in process (`World.handle`, the bytes the server would send),
each group's branches on one day, in two conditions: every call live, as (A) gets it, and the
group's reads shared by address and occurrence, as (C) serves them. Without it the new
strategy's sizes would rest on no numbers at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worldsim import noise, shop_agent
from worldsim.agent import Reply
from worldsim.simulate import InProcessTransport
from worldsim.world import World

# `GET /cart` shows the branch's own cart, so (C) fetches it fresh (the rules say so too).
_OWN_READS = frozenset({"/cart"})


class SharedReadsTransport:
    """A branch's calls; its reads served from the group's first asker, its writes its own.

    The world is uncooperative (a fresh draw per call), so a read the group shares is the one
    the first branch to ask at that address and occurrence saw: what (C)'s tape serves. Reads
    of ``own`` paths are the branch's own; with ``until_write`` every read after the branch's
    first write is too (a tape that knows no dependency refetches all of them).
    """

    def __init__(
        self,
        inner: InProcessTransport,
        shared: dict[tuple[object, ...], Reply],
        *,
        own: frozenset[str] = _OWN_READS,
        until_write: bool = False,
    ) -> None:
        self.inner = inner
        self.shared = shared
        self.own = own
        self.until_write = until_write
        self.written = False
        self.counts: dict[tuple[object, ...], int] = {}

    def send(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        if method != "GET" or path in self.own or self.written:
            self.written = self.until_write and (self.written or path != "/sessions")
            return self.inner.send(method, path, params, body, headers)
        key: tuple[object, ...] = (path, tuple(params))
        occurrence = self.counts.get(key, 0)
        self.counts[key] = occurrence + 1
        address = (*key, occurrence)
        if address not in self.shared:
            self.shared[address] = self.inner.send(method, path, params, body, headers)
        return self.shared[address]


def group_rollouts(
    day: int,
    *,
    shared: bool,
    strategies: Sequence[shop_agent.Strategy] = tuple(shop_agent.Strategy),
    world_seed: int = 0,
    agent_seed_base: int = 7,
) -> list[shop_agent.Rollout]:
    """One group on ``day``, one branch per strategy, in the order given."""
    world = World(
        noise.salted_seed(world_seed, f"shop-check:{day}"), kind="shop", cooperative=False
    )
    reads: dict[tuple[object, ...], Reply] = {}
    rollouts = []
    for index, strategy in enumerate(strategies):
        transport = InProcessTransport(world, branch=f"check-{index}")
        sender = SharedReadsTransport(transport, reads) if shared else transport
        seed = agent_seed_base * 1_000_003 + day * 64 + index
        rollouts.append(shop_agent.run_rollout(sender, strategy, seed, epoch=day))
    return rollouts


def group_rewards(day: int, *, shared: bool, world_seed: int = 0) -> list[float]:
    """One group's rewards on ``day``, one branch per strategy in `Strategy` order."""
    return [rollout.reward for rollout in group_rollouts(day, shared=shared, world_seed=world_seed)]


def reward_tables(days: Sequence[int], *, world_seed: int = 0) -> dict[str, list[list[float]]]:
    """Per condition (`naive`, `groundhog`), a row of the strategies' rewards per day."""
    return {
        "naive": [group_rewards(day, shared=False, world_seed=world_seed) for day in days],
        "groundhog": [group_rewards(day, shared=True, world_seed=world_seed) for day in days],
    }
