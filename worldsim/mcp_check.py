"""The MCP world's strategies run in process: the check of their order and the declared gap.

The protocol declares the MCP world's true `upgrade - compare` gap (mcp_desk.declared_gap)
before its first benchmark run; this runs the agent against the desk with no transport (each
rollout its own session on its day, dropped after) so a test and a reader can check, cheaply,
that the strategies rank as declared and that the measured gap agrees with the arithmetic.
Without it the declared gap would be an unchecked claim about the world's constants.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from worldsim import mcp_agent, mcp_desk, mcp_state


async def _rewards(
    desk: mcp_state.Desk, days: Sequence[int], agent_seed_base: int
) -> dict[str, list[float]]:
    rewards: dict[str, list[float]] = {str(s): [] for s in mcp_agent.Strategy}
    for day in days:
        for index, strategy in enumerate(mcp_agent.Strategy):
            seed = agent_seed_base * 1_000_003 + day * 64 + index
            rollout = await rollout_on_day(desk, f"check-{day}-{index}", day, strategy, seed)
            rewards[str(strategy)].append(rollout.reward)
    return rewards


async def rollout_on_day(
    desk: mcp_state.Desk,
    session: str,
    day: int,
    strategy: mcp_agent.Strategy | str,
    agent_seed: int,
    shared: SharedReads | None = None,
) -> mcp_agent.Rollout:
    """One rollout in its own session on ``day`` (dropped after), its reads shared or not."""
    desk.open_session(session, day)
    try:
        tools = mcp_agent.DeskTools(_Rollout(desk, session, shared))
        return await mcp_agent.run_rollout(tools, strategy, agent_seed)
    finally:
        desk.reset(session)


def in_process_rewards(
    days: Sequence[int], *, world_seed: int = 0, agent_seed_base: int = 7
) -> dict[str, list[float]]:
    """Each strategy's reward on each day, every rollout with independent per-call noise."""
    return asyncio.run(_rewards(mcp_state.Desk(world_seed), days, agent_seed_base))


class SharedReads:
    """A group's read-only answers shared by (tool, arguments, occurrence), as (C) serves them.

    `my_trip` after the rollout's own `hold` is its own (the trip changed); before, and every
    quote, is the first asker's answer. What the benchmark's (C) does through the proxy, here in
    process, so the protocol's sizes can rest on a predicted variance before the first run.
    """

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, object]] = {}


class _Rollout:
    """One rollout's tool calls in process: its own session, occurrences and writes."""

    def __init__(self, desk: mcp_state.Desk, session: str, shared: SharedReads | None) -> None:
        self.desk = desk
        self.session = session
        self.shared = shared
        self.counts: dict[str, int] = {}
        self.wrote = False

    def __call__(self, tool: str, arguments: dict[str, object]) -> dict[str, object]:
        if tool in mcp_desk.WRITE_TOOLS:
            self.wrote = True
        key = mcp_desk.tool_key(tool, arguments)
        occurrence = self.counts.get(key, 0)
        self.counts[key] = occurrence + 1
        own = tool in mcp_desk.WRITE_TOOLS or (tool == "my_trip" and self.wrote)
        if self.shared is None or own:
            return self.desk.call(self.session, tool, arguments)
        address = f"{key}|{occurrence}"
        if address not in self.shared.answers:
            self.shared.answers[address] = self.desk.call(self.session, tool, arguments)
        return self.shared.answers[address]


async def _group(
    desk: mcp_state.Desk,
    day: int,
    strategies: Sequence[mcp_agent.Strategy],
    agent_seed_base: int,
    shared: SharedReads | None,
) -> list[float]:
    rewards = []
    for index, strategy in enumerate(strategies):
        seed = agent_seed_base * 1_000_003 + day * 64 + index
        rollout = await rollout_on_day(desk, f"group-{day}-{index}", day, strategy, seed, shared)
        rewards.append(rollout.reward)
    return rewards


def group_contrasts(
    days: Sequence[int], *, shared: bool, world_seed: int = 0, agent_seed_base: int = 7
) -> list[float]:
    """Per day, `upgrade - compare` in one group: independent reads (A) or shared ones (C)."""
    desk = mcp_state.Desk(world_seed)
    strategies = (mcp_agent.Strategy.COMPARE, mcp_agent.Strategy.UPGRADE)

    async def every() -> list[float]:
        contrasts = []
        for day in days:
            reads = SharedReads() if shared else None
            compare, upgrade = await _group(desk, day, strategies, agent_seed_base, reads)
            contrasts.append(upgrade - compare)
        return contrasts

    return asyncio.run(every())
