"""A world design's (A) and (C) groups in process: the predictor checked without servers.

bench.predict serves each design through the real resolver and proxy, which costs seconds a
group. This runs the same world (`World.handle`, the bytes the server would send) and the real
agent in process, in two conditions: every call live, as (A) gets it, and each branch's reads
before its first write served from the group's first asker at that address and occurrence,
as (C)'s tape serves them (after a write the branch's own state may differ, so its reads go
live). Tests use it to check bench/prediction.py on thousands of groups in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worldsim import noise
from worldsim.agent import Reply, Rollout, run_rollout
from worldsim.designs import Design
from worldsim.simulate import InProcessTransport
from worldsim.world import World


class _PrefixSharedTransport:
    """Reads before this branch's first write come from the group's first asker."""

    def __init__(self, inner: InProcessTransport, shared: dict[tuple[object, ...], Reply]) -> None:
        self.inner = inner
        self.shared = shared
        self.counts: dict[tuple[object, ...], int] = {}
        self.written = False

    def send(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        if method != "GET" or self.written:
            self.written = self.written or path != "/sessions"
            return self.inner.send(method, path, params, body, headers)
        key: tuple[object, ...] = (path, tuple(params))
        occurrence = self.counts.get(key, 0)
        self.counts[key] = occurrence + 1
        address = (*key, occurrence)
        if address not in self.shared:
            self.shared[address] = self.inner.send(method, path, params, body, headers)
        return self.shared[address]


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
        sender = _PrefixSharedTransport(transport, reads) if shared else transport
        seed = noise.salted_seed(design.agent_seed, f"{day}:{index}")
        rollouts.append(run_rollout(sender, strategy, seed, epoch=day, **design.agent_options()))
    return rollouts
