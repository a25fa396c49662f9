"""The MCP world's benchmark cell: its wiring, and groups through the proxy.

Its sizes are held to bench.power_simulated in tests/bench/test_power_simulated.py. The cell
runs only uncooperative. End to
end, through the real proxy and resolver processes against `python -m worldsim --world mcp`,
with the tape config the cell uses (`mcp_tools`, rules with `{session}`): siblings of a fork
are served the same bytes for every read-only tool (one world call for the group) while a
branch's own hold makes its `my_trip` fetched fresh, showing its voucher; and the cell's group
runner grades replay's stale trip as a lie and Groundhog's reads as true.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from bench import claims
from bench import config as bench_config
from bench.__main__ import build_config, parse_args
from bench.groups import RunContext, run_group
from bench.mcp_groups import MCP_RULES, MCP_TOOLS
from bench.world_client import WorldControl
from groundhog.client import Groundhog
from groundhog.protocol.headers import BRANCH, TAPE
from tests.proxy.stack import Stack, running_stack
from tests.support.servers import ServerProcess, start_server
from worldsim import mcp_client

DAY = 31337


def test_the_mcp_world_runs_as_an_uncooperative_cell_only() -> None:
    config = build_config(parse_args(["--quick", "--worlds-run", "research,mcp"]))
    assert bench_config.cells(config) == [
        ("research", "uncooperative"),
        ("research", "cooperative"),
        ("mcp", "uncooperative"),
    ]
    cell = bench_config.for_world(config, "mcp")
    assert (cell.better_action, cell.worse_action) == ("upgrade", "compare")
    full = replace(bench_config.full_config(), worlds_run=("mcp",))
    sized = bench_config.for_cell(full, "mcp", "uncooperative", claims.load()["sizes"])
    assert (sized.worlds, sized.reference_pairs, len(sized.grpo_seeds)) == (250, 750, 4)


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[ServerProcess]:
    server = start_server(["worldsim", "--world", "mcp", "--seed", "3"])
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("mcp-cell")) as running:
        yield running


def stats(world: ServerProcess) -> dict:
    return httpx.get(f"{world.url}/_stats", timeout=30, trust_env=False).json()["endpoints"]


async def _sibling(
    stack: Stack, tape: str, branch: str, url: str, *, hold: bool
) -> dict[str, object]:
    proxy = f"http://127.0.0.1:{stack.proxy.port}"
    headers = {TAPE: tape, BRANCH: branch}
    async with mcp_client.open_tools(url, proxy=proxy, headers=headers) as tools:
        search = await tools.call("search_flights", {})
        detail = await tools.call("flight_details", {"flight": "f2"})
        seen: dict[str, object] = {"search": search, "detail": detail}
        if hold:
            bookable = next(f for f in search.payload["flights"] if f["seats"])
            seen["hold"] = await tools.call("hold", {"quote": bookable["quote"]})
            seen["held"] = bookable["id"]
        seen["trip"] = await tools.call("my_trip", {})
    return seen


def test_siblings_share_read_only_tool_answers_and_a_branchs_own_hold_is_fetched_fresh(
    stack: Stack, mcp_server: ServerProcess
) -> None:
    tape = stack.open_tape(
        dependency_model="rules", rules=MCP_RULES, mcp_tools=MCP_TOOLS, world_seed=DAY
    )
    writer, first_reader, second_reader = stack.fork(tape, 3)
    url = mcp_client.endpoint(mcp_server.url, DAY)
    before = stats(mcp_server)

    wrote = asyncio.run(_sibling(stack, tape, writer, url, hold=True))
    read = asyncio.run(_sibling(stack, tape, first_reader, url, hold=False))
    again = asyncio.run(_sibling(stack, tape, second_reader, url, hold=False))

    after = stats(mcp_server)
    ran = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    # The read-only tools: the same bytes for every sibling, one world call for the group.
    for tool in ("search", "detail"):
        answers = [seen[tool] for seen in (wrote, read, again)]
        assert answers[0].payload == answers[1].payload == answers[2].payload, tool
        assert [a.decision for a in answers] == ["recorded", "shared", "shared"], tool
    assert ran["tools/call search_flights"] == 1 and ran["tools/call flight_details"] == 1
    # The writer's own hold went live, and its trip after it was fetched fresh: it shows the
    # hold and its voucher, which no sibling is shown.
    assert wrote["hold"].decision == "write"
    assert wrote["trip"].decision == "refetched" and wrote["trip"].fingerprint != ""
    assert wrote["trip"].payload["hold"] == wrote["held"]
    assert wrote["trip"].payload["voucher"]["code"] == f"UPGRADE-{wrote['held']}"
    assert read["trip"].payload["hold"] is None and read["trip"].payload["voucher"] is None
    assert (read["trip"].decision, again["trip"].decision) == ("recorded", "shared")
    assert read["trip"].payload == again["trip"].payload
    assert ran["tools/call my_trip"] == 2 and ran["tools/call hold"] == 1


@pytest.fixture(scope="module")
def context(stack: Stack, mcp_server: ServerProcess) -> Iterator[RunContext]:
    admin = Groundhog(stack.resolver.url, proxy_url=f"http://127.0.0.1:{stack.proxy.port}")
    with admin, WorldControl(mcp_server.url) as world:
        yield RunContext(
            admin=admin,
            world=world,
            world_url=mcp_server.url,
            proxy_url=f"http://127.0.0.1:{stack.proxy.port}",
            run_id="mcptest",
            cooperative=False,
            world_kind="mcp",
        )


def sandboxes(context: RunContext) -> int:
    return int(
        httpx.get(f"{context.world_url}/_stats", timeout=30, trust_env=False).json()["sandboxes"]
    )


@pytest.mark.parametrize("mode", ["replay", "groundhog"])
def test_the_cells_groups_are_graded_by_the_worlds_oracle(context: RunContext, mode: str) -> None:
    before = sandboxes(context)
    group = run_group(
        context,
        tape=f"mcp-cell-{mode}",
        world_seed=DAY + 1,
        mode=mode,
        dependency_model="rules",
        strategies=("first", "compare", "upgrade"),
        seed_base=7,
        probe=True,
        rules=MCP_RULES,
        branch_label=f"mcp-{mode}",
    )
    by_strategy = {branch.strategy: branch for branch in group.branches}
    upgrade = by_strategy["upgrade"]
    assert all(branch.grades.reads > 0 and branch.grades.ungraded == 0 for branch in group.branches)
    if mode == "replay":
        # The probe recorded the trip before any hold: replay serves it after the hold, a lie
        # the oracle catches, and the agent is blind to its own write.
        assert upgrade.grades.stale_after_write == 1
        assert upgrade.outcome.saw_own_write is False
    else:
        assert sum(branch.grades.stale for branch in group.branches) == 0
        assert upgrade.outcome.saw_own_write is True
        assert upgrade.grades.pairs == [(True, True)]
    # Every session the group opened (the probe's too) was dropped when it ended.
    assert sandboxes(context) == before
