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

from worldsim import mcp_agent, mcp_world


async def _rewards(
    desk: mcp_world.Desk, days: Sequence[int], agent_seed_base: int
) -> dict[str, list[float]]:
    rewards: dict[str, list[float]] = {str(s): [] for s in mcp_agent.Strategy}
    for day in days:
        for index, strategy in enumerate(mcp_agent.Strategy):
            session = f"check-{day}-{index}"
            desk.open_session(session, day)
            tools = mcp_agent.DeskTools(
                lambda tool, arguments, session=session: desk.call(session, tool, arguments)
            )
            seed = agent_seed_base * 1_000_003 + day * 64 + index
            try:
                rollout = await mcp_agent.run_rollout(tools, strategy, seed)
            finally:
                desk.reset(session)
            rewards[str(strategy)].append(rollout.reward)
    return rewards


def in_process_rewards(
    days: Sequence[int], *, world_seed: int = 0, agent_seed_base: int = 7
) -> dict[str, list[float]]:
    """Each strategy's reward on each day, every rollout with independent per-call noise."""
    return asyncio.run(_rewards(mcp_world.Desk(world_seed), days, agent_seed_base))
