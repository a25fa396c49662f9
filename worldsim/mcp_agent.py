"""The MCP world's agent: three strategies over the travel desk's tools, and its reward.

It drives the desk through whatever calls its tools: the official MCP client over streamable
HTTP (`mcp_client.open_tools`, through Groundhog's proxy in the benchmark) or the desk in
process (`DeskTools`, for the in-process check of the strategies' order). `upgrade` beats
`compare` only when the agent sees its own write: after `hold` it reads `my_trip`, which shows
an upgrade voucher for the held flight, and books with it. A replay that serves `my_trip` as it
was before the hold shows no voucher, and the saving vanishes. Reward = the flight's value - the
total paid (quoted fare + fee - voucher) - a latency cost + the agent's own noise, all read from
the answers. Without it the benchmark would have no rollout whose reward comes over MCP.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Protocol

from worldsim import mcp_desk, noise
from worldsim.agent import LATENCY_COST_PER_SECOND, Step, parse_strategy

COMPARED = 3
AGENT_NOISE_SD = 0.05
ATTENTION_COEFFICIENT = None  # the desk's reward has no observed zero-mean covariate


class Strategy(StrEnum):
    """What the agent does; true ranking upgrade > compare > first."""

    FIRST = "first"  # book the first listed flight with seats
    COMPARE = "compare"  # read three flights' details, book the best value for money
    UPGRADE = "upgrade"  # compare, hold, read the trip's voucher, book with it


PROBE_STRATEGY = Strategy.UPGRADE


@dataclass(frozen=True)
class ToolReply:
    """One tool's answer and how it was served (the decision header, when through a proxy)."""

    payload: dict[str, Any]
    decision: str | None = None
    fingerprint: str = ""


class ToolCaller(Protocol):
    async def call(self, tool: str, arguments: dict[str, object]) -> ToolReply: ...


@dataclass(frozen=True)
class Rollout:
    strategy: Strategy
    agent_seed: int
    flight: str
    value: float
    total: float
    latency_cost: float
    agent_noise: float
    voucher_seen: bool | None
    reward: float
    steps: tuple[Step, ...]
    session: str | None = None
    attention: float | None = None

    @property
    def saw_own_write(self) -> bool | None:
        """For `upgrade`: did the trip show the flight it had just held?"""
        return self.voucher_seen

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "strategy": str(self.strategy)}


class _Calls:
    """One rollout's calls: keeps every step and the latency the answers reported."""

    def __init__(self, tools: ToolCaller) -> None:
        self.tools = tools
        self.steps: list[Step] = []

    async def __call__(self, tool: str, **arguments: object) -> dict[str, Any]:
        reply = await self.tools.call(tool, arguments)
        latency = float(reply.payload.get("latency_ms", 0.0))
        self.steps.append(Step("tools/call", tool, 200, latency, reply.decision))
        return reply.payload

    def latency_seconds(self) -> float:
        return sum(step.latency_ms for step in self.steps) / 1000.0


async def run_rollout(tools: ToolCaller, strategy: Strategy | str, agent_seed: int) -> Rollout:
    """Run one rollout; deterministic given the agent seed and the answers."""
    strategy = parse_strategy(strategy, Strategy)
    call = _Calls(tools)
    listed = [f for f in (await call("search_flights"))["flights"] if f["seats"]]
    if not listed:
        raise ValueError("no flight has seats today")
    choice, quote = str(listed[0]["id"]), str(listed[0]["quote"])
    if strategy is not Strategy.FIRST:
        candidates = [str(flight["id"]) for flight in listed[:COMPARED]]
        # The agent's own seed orders its reads: read order varies per rollout.
        candidates.sort(key=lambda flight_id: noise.uniform(agent_seed, "order", flight_id))
        scored: dict[str, tuple[float, str]] = {}
        for flight_id in candidates:
            detail = await call("flight_details", flight=flight_id)
            scored[flight_id] = (float(detail["value"]) - float(detail["fare"]), detail["quote"])
        choice = max(sorted(scored), key=lambda flight_id: scored[flight_id][0])
        quote = scored[choice][1]
    await call("hold", quote=quote)
    voucher: str | None = None
    voucher_seen: bool | None = None
    if strategy is Strategy.UPGRADE:
        trip = await call("my_trip")
        offered = trip.get("voucher")
        voucher_seen = offered is not None and trip.get("hold") == choice
        voucher = str(offered["code"]) if voucher_seen and offered else None
    booking = await call("book", **({"voucher": voucher} if voucher else {}))
    agent_noise = AGENT_NOISE_SD * noise.normal(agent_seed, "agent", "desk")
    latency_cost = LATENCY_COST_PER_SECOND * call.latency_seconds()
    value, total = float(booking["value"]), float(booking["total"])
    reward = value - total - latency_cost + agent_noise
    return Rollout(
        strategy=strategy,
        agent_seed=agent_seed,
        flight=choice,
        value=value,
        total=total,
        latency_cost=latency_cost,
        agent_noise=agent_noise,
        voucher_seen=voucher_seen,
        reward=reward if math.isfinite(reward) else math.nan,
        steps=tuple(call.steps),
    )


def probe_write_reply(tool: str, arguments: dict[str, object]) -> dict[str, Any]:
    """What a probe answers locally for a writing tool (it never calls one)."""
    if tool == "hold":
        return {"held": str(arguments.get("quote", "")).split(":")[0], "latency_ms": 0.0}
    return {"flight": "", "value": 0.0, "total": 0.0, "latency_ms": 0.0}


class ProbeTools:
    """Passes read-only tools through and answers writing tools locally, never calling them.

    Running `upgrade` over this records every read it would make, in the base state, with no
    write: the prefix probe. Replay (B) can only lie about a read on the tape.
    """

    def __init__(self, inner: ToolCaller) -> None:
        self.inner = inner

    async def call(self, tool: str, arguments: dict[str, object]) -> ToolReply:
        if tool in mcp_desk.WRITE_TOOLS:
            return ToolReply(probe_write_reply(tool, arguments))
        return await self.inner.call(tool, arguments)


class DeskTools:
    """The desk called in process, as one session (no transport): calibration and tests."""

    def __init__(self, call: Callable[[str, dict[str, object]], dict[str, Any]]) -> None:
        self._call = call

    async def call(self, tool: str, arguments: dict[str, object]) -> ToolReply:
        return ToolReply(self._call(tool, arguments))
