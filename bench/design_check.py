"""A world design's (A) and (C) groups in process: the predictor checked without servers.

bench.predict serves each design through the real resolver and proxy, which costs seconds a
group. This runs the same world (`World.handle`, the bytes the server would send) and the real
agent in process, in two conditions: every call live, as (A) gets it, and each branch's reads
before its first write served from the group's first asker at that address and occurrence,
as (C)'s tape serves them (after a write the branch's own state may differ, so its reads go
live). Tests use it to check bench/prediction.py on thousands of groups in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.world_designs import Design
from worldsim import noise
from worldsim.agent import Reply, Rollout, run_rollout
from worldsim.shop_check import SharedReadsTransport
from worldsim.simulate import InProcessTransport
from worldsim.world import World


def world(design: Design) -> World:
    """The design's uncooperative research world, in process."""
    return World(
        design.world_seed,
        cooperative=False,
        attention_call_weight=design.attention_call_weight,
        write_noise_sd=design.write_noise_sd,
        clock_scale=design.clock_scale,
        sandbox_cap=1 << 20,
    )


def group(
    design: Design, server: World, day: int, *, shared: bool, strategies: Sequence[str]
) -> list[Rollout]:
    """One group on ``day``: one rollout per strategy, its agent seed fixed by the day."""
    reads: dict[tuple[object, ...], Reply] = {}
    rollouts = []
    for index, strategy in enumerate(strategies):
        transport = InProcessTransport(server, branch=f"d{day}-{int(shared)}-{index}")
        sender = (
            SharedReadsTransport(transport, reads, own=frozenset(), until_write=True)
            if shared
            else transport
        )
        seed = noise.salted_seed(design.agent_seed, f"{day}:{index}")
        rollouts.append(run_rollout(sender, strategy, seed, epoch=day, **design.agent_options()))
    return rollouts
