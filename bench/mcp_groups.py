"""One MCP world group through the real proxy: the official MCP client per branch, graded.

The MCP world's rollouts are worldsim's MCP agent calling tools with the SDK's client over
streamable HTTP (worldsim/mcp_client.py), each branch its own MCP session through Groundhog's
proxy (the httpx2 client's proxy setting and the `X-Groundhog-Tape` / `-Branch` headers), the
siblings of a group concurrently, one thread and event loop each. Every read-only tool answer
is graded by the world's oracle at once (its `request_id` against the branch's own session), as
bench/groups.py grades the HTTP worlds' reads, so the lie rate comes from the world. The tape's
config is what a user would write for this server: `mcp_tools` naming each tool read or write,
and `rules` whose `{session}` keeps one session's hold from another's trip. Without this module
the MCP cell would have no groups: bench/groups.py drives only HTTP agents.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

from bench import agent_adapter
from bench.groups import (
    CLIENT_TIMEOUT,
    PROBE_BRANCH,
    BranchResult,
    Grades,
    GroupResult,
    RunContext,
    agent_seed,
    run_branches,
)
from bench.world_client import WorldControl
from groundhog.protocol import headers as protocol_headers
from worldsim import mcp_agent, mcp_client

MCP_TOOLS: dict[str, str] = {
    "search_flights": "read",
    "flight_details": "read",
    "my_trip": "read",
    "hold": "write",
    "book": "write",
}
"""The tape's `mcp_tools`: each tool read or write, as the server's annotations declare."""

MCP_RULES: list[dict[str, Any]] = [
    {"operation": "tools/call search_flights", "reads": [], "writes": []},
    {"operation": "tools/call flight_details", "reads": [], "writes": []},
    {"operation": "tools/call my_trip", "reads": ["trip:{session}"], "writes": []},
    {"operation": "tools/call hold", "reads": [], "writes": ["trip:{session}"]},
    {"operation": "tools/call book", "reads": [], "writes": ["trip:{session}", "bookings"]},
]
"""Rules for (C), written from the tools' descriptions: quotes read no state; the trip is the
session's own (a hold in one session leaves every other session's trip, and its reads, alone)."""


class McpGrader:
    """`on_read` hook: grades each read-only tool answer by the oracle, for its own session."""

    def __init__(self, world: WorldControl, *, enabled: bool = True) -> None:
        self.world = world
        self.enabled = enabled
        self.session: str | None = None
        self.grades = Grades()
        self._lock = threading.Lock()

    def __call__(self, _tool: str, reply: mcp_agent.ToolReply, written: bool) -> None:
        if not self.enabled:
            return
        rid = reply.payload.get("request_id")
        if not isinstance(rid, str) or self.session is None:
            self.grades.ungraded += 1
            return
        verdict = self.world.grade([{"request_id": rid, "sandbox": self.session}])[0]
        with self._lock:
            grades = self.grades
            grades.reads += 1
            grades.stale += int(verdict["stale"])
            if written:
                grades.reads_after_write += 1
                grades.stale_after_write += int(verdict["stale"])
                grades.pairs.append((reply.fingerprint != "", bool(verdict["changed"])))


async def _rollout(
    url: str,
    *,
    proxy: str | None,
    headers: dict[str, str],
    strategy: str,
    seed: int,
    grader: McpGrader,
    probe: bool = False,
    reread: bool = False,
) -> mcp_agent.Rollout:
    async with mcp_client.open_tools(
        url, proxy=proxy, headers=headers, on_read=grader, timeout=CLIENT_TIMEOUT
    ) as tools:
        grader.session = tools.session_id
        caller: mcp_agent.ToolCaller = mcp_agent.ProbeTools(tools) if probe else tools
        rollout = await mcp_agent.run_rollout(caller, strategy, seed)
        for tool, arguments in list(tools.reads) if reread else []:
            await tools.call(tool, arguments)
    return dataclasses.replace(rollout, session=tools.session_id)


def open_mcp_tape(
    context: RunContext, tape: str, world_seed: int, mode: str, model: str, rules: Sequence[Any]
) -> None:
    """A tape for one MCP group: the tools' kinds, and (C)'s rules under `rules`."""
    context.admin.open_tape(
        tape,
        world_seed,
        mode=mode,
        dependency_model=model,
        cooperative_hosts=[],
        rules=list(rules),
        mcp_tools=MCP_TOOLS,
        **context.credential_settings,
    )


def run_group(
    context: RunContext,
    *,
    tape: str,
    world_seed: int,
    mode: str,
    dependency_model: str,
    strategies: Sequence[str],
    seed_base: int,
    probe: bool,
    reread: bool = False,
    rules: Sequence[dict[str, Any]] = (),
    branch_label: str,
    concurrent: bool = True,
) -> GroupResult:
    """bench/groups.py's `run_group` for the MCP world (same arguments, same result)."""
    open_mcp_tape(context, tape, world_seed, mode, dependency_model, rules)
    stem = f"{branch_label}-"
    names = [f"{stem}{index}-{strategy}" for index, strategy in enumerate(strategies)]
    if probe:
        names.append(f"{stem}{PROBE_BRANCH}")
    forked = context.admin.fork(tape, "root", names, shim_counters=None)
    branches = forked.branches
    url = mcp_client.endpoint(context.world_url, world_seed)
    result = GroupResult(tape=tape, world_seed=world_seed)
    sessions: list[str] = []

    def headers(branch: str) -> dict[str, str]:
        return protocol_headers.naming(tape, branch, forked.capabilities.get(branch))

    try:
        if probe:
            grader = McpGrader(context.world, enabled=False)
            seed = agent_seed(seed_base, world_seed, len(strategies))
            try:
                asyncio.run(
                    _rollout(
                        url,
                        proxy=context.proxy_for(0),
                        headers=headers(branches[-1]),
                        strategy=str(mcp_agent.PROBE_STRATEGY),
                        seed=seed,
                        grader=grader,
                        probe=True,
                    )
                )
            finally:
                sessions += [grader.session] if grader.session else []

        def one(index: int) -> BranchResult:
            strategy = strategies[index]
            grader = McpGrader(context.world)
            seed = agent_seed(seed_base, world_seed, index)
            try:
                rollout = asyncio.run(
                    _rollout(
                        url,
                        proxy=context.proxy_for(index),
                        headers=headers(branches[index]),
                        strategy=strategy,
                        seed=seed,
                        grader=grader,
                        reread=reread,
                    )
                )
            finally:
                sessions.extend([grader.session] if grader.session else [])
            outcome = agent_adapter.outcome(rollout)
            return BranchResult(branches[index], strategy, seed, outcome, grader.grades)

        result.branches = run_branches(one, len(strategies), concurrent=concurrent)
        result.report = dataclasses.asdict(context.admin.report(tape, view="counts"))
    finally:
        context.world.drop_sandboxes(sessions)
    return result


def run_live(
    context: RunContext, *, world_seed: int, strategy: str, seed: int, client_key: str
) -> agent_adapter.AgentOutcome:
    """One rollout straight against the MCP world, no proxy: the live world itself."""
    del client_key  # an MCP session is named by the server, not by the client
    grader = McpGrader(context.world, enabled=False)
    try:
        rollout = asyncio.run(
            _rollout(
                mcp_client.endpoint(context.world_url, world_seed),
                proxy=None,
                headers={},
                strategy=strategy,
                seed=seed,
                grader=grader,
            )
        )
    finally:
        context.world.drop_sandboxes([grader.session] if grader.session else [])
    return agent_adapter.outcome(rollout)
