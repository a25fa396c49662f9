"""MCP tool traffic of a group of sibling branches, end to end (issue 30's "done when").

Four siblings run the official MCP client (streamable HTTP, SSE answers) through the real proxy
against a per-session MCPServer (mcp 2), with the tape's default config: each opens its own
session (a live write), they share the read-only tool's answer (one server call), one branch's
write tool is seen by its own reads only, each session works to its end whatever the others do,
and on the sealed tape a new fork replays the conversation with no live call.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation

from tests.proxy.mcp_sessions import Branch, mcp_branch
from tests.proxy.stack import Stack
from tests.support.servers import ServerProcess


def calls(world: ServerProcess) -> dict[str, int]:
    return httpx.get(f"{world.url}/calls", timeout=10, trust_env=False).json()


async def sibling(
    stack: Stack,
    tape: str,
    branch: str,
    url: str,
    *,
    writer: bool,
    writer_done: asyncio.Event,
    searched: asyncio.Barrier,
) -> tuple[Branch, dict[str, str]]:
    seen: dict[str, str] = {}
    async with mcp_branch(stack.proxy.port, tape, branch, url) as me:
        tools = await me.session.list_tools()
        assert {tool.name for tool in tools.tools} == {"search", "write_note", "read_notes"}
        seen["search"] = await me.text("search", query="solar")
        await searched.wait()  # every sibling asked before anyone writes
        if writer:
            assert await me.text("write_note", note=f"from {branch}") == "ok"
        seen["notes"] = await me.text("read_notes")
        if not writer:
            await writer_done.wait()  # the writer's session has ended (its DELETE went out)
            seen["notes-after"] = await me.text("read_notes")
            seen["search-after"] = await me.text("search", query="solar")
    if writer:
        writer_done.set()
    return me, seen


async def group(stack: Stack, tape: str, branches: list[str], url: str) -> list:
    writer_done, searched = asyncio.Event(), asyncio.Barrier(len(branches))
    return await asyncio.gather(
        *(
            sibling(
                stack,
                tape,
                branch,
                url,
                writer=index == 0,
                writer_done=writer_done,
                searched=searched,
            )
            for index, branch in enumerate(branches)
        )
    )


def test_four_mcp_siblings_share_reads_keep_their_sessions_and_see_only_their_own_write(
    stack: Stack, mcp_world: ServerProcess
) -> None:
    tape = stack.open_tape()  # the defaults: closure, no rules, no protocol config
    branches = stack.fork(tape, 4)
    url = f"{mcp_world.url}/mcp"
    before = calls(mcp_world)

    results = asyncio.run(group(stack, tape, branches, url))

    after = calls(mcp_world)
    ran = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    (writer, written), *readers = results
    # Each branch holds its own live session, opened by a live write of its own.
    assert len({me.session_id for me, _seen in results}) == 4
    for me, _seen in results:
        assert me.decided("initialize") == ["write"], me.decisions
        assert me.decided("DELETE") == ["write"], me.decisions
    # The read-only tool: one server call for the group, the same answer for every sibling.
    assert len({seen["search"] for _me, seen in results}) == 1
    # The writer's own read sees its write; its siblings' reads do not, before or after its
    # session ended, and their sessions kept working to the end.
    assert written["notes"] == f"from {branches[0]}"
    assert writer.decided("tools/call write_note") == ["write"]
    assert writer.decided("tools/call read_notes") == ["refetched"]
    for _me, seen in readers:
        assert seen["notes"] == seen["notes-after"] == "(none)"
    assert len({seen["search-after"] for _me, seen in readers}) == 1
    # search: once for the group, once more for the readers' second ask (occurrence 1);
    # read_notes: the writer's own, the readers' first and their second.
    assert ran == {"search": 2, "write_note": 1, "read_notes": 3}
    protocols = stack.admin("GET", f"/v1/tapes/{tape}/report").json()["protocols"]
    assert protocols["hosts"]["127.0.0.1"]["fired"]["mcp"] > 0
    assert protocols["hosts"]["127.0.0.1"]["failed"] == {}

    stack.seal(tape)
    (replayer,) = stack.fork(tape, ["replay"])
    sealed = calls(mcp_world)
    me, seen = asyncio.run(
        sibling(
            stack,
            tape,
            replayer,
            url,
            writer=False,
            writer_done=_set(asyncio.Event()),
            searched=asyncio.Barrier(1),
        )
    )
    assert calls(mcp_world) == sealed  # nothing reached the world
    assert seen == results[1][1]
    assert me.decided("initialize") == ["replayed-write"]
    assert me.decided("tools/call search") == ["shared", "shared"]


def _set(event: asyncio.Event) -> asyncio.Event:
    event.set()
    return event


SESSION_RULES = [
    {"operation": "tools/call write_note", "writes": ["notes:{session}"]},
    {"operation": "tools/call read_notes", "reads": ["notes:{session}"]},
]


async def two_sessions(stack: Stack, tape: str, branch: str, url: str) -> dict[str, object]:
    """One branch with two MCP sessions: the first writes a note, both read their notes."""
    async with (
        mcp_branch(stack.proxy.port, tape, branch, url) as first,
        mcp_branch(stack.proxy.port, tape, branch, url) as second,
    ):
        assert await first.text("write_note", note="first's note") == "ok"
        seen = {
            "second": await second.text("read_notes"),
            "first": await first.text("read_notes"),
        }
    return {
        **seen,
        "decisions": [first.decisions, second.decisions],
        "sessions": [first.session_id, second.session_id],
    }


def test_a_session_placeholder_keeps_one_sessions_write_from_anothers_reads_and_replays(
    stack: Stack, mcp_world: ServerProcess
) -> None:
    tape = stack.open_tape(dependency_model="rules", rules=SESSION_RULES)
    recorder, sibling = stack.fork(tape, 2)
    url = f"{mcp_world.url}/mcp"

    recorded = asyncio.run(two_sessions(stack, tape, recorder, url))

    assert recorded["first"] == "first's note" and recorded["second"] == "(none)"
    first_log, second_log = recorded["decisions"]
    # notes:{session} names the session by the ask that opened it: the first session's write
    # leaves the second session's notes unwritten, so that read is at the unwritten address
    # (recorded), while the writer's own read is refetched.
    assert [d for _m, op, d in second_log if op == "tools/call read_notes"] == ["recorded"]
    assert [d for _m, op, d in first_log if op == "tools/call read_notes"] == ["refetched"]

    # A sibling's own first session reads the same unwritten notes: shared, one server call.
    before = calls(mcp_world)

    async def sibling_reads() -> tuple[str, list[str]]:
        async with mcp_branch(stack.proxy.port, tape, sibling, url) as me:
            return await me.text("read_notes"), me.decided("tools/call read_notes")

    notes, decided = asyncio.run(sibling_reads())
    assert (notes, decided) == ("(none)", ["shared"])
    assert calls(mcp_world).get("read_notes", 0) == before.get("read_notes", 0)

    # Sealed, a new fork runs the two-session conversation again with no live call: its
    # sessions hold ids the proxy minted, named as the recording's were by their openers.
    stack.seal(tape)
    (replayer,) = stack.fork(tape, ["replay-two-sessions"])
    sealed = calls(mcp_world)
    replayed = asyncio.run(two_sessions(stack, tape, replayer, url))
    assert calls(mcp_world) == sealed
    assert (replayed["first"], replayed["second"]) == ("first's note", "(none)")
    assert len(set(replayed["sessions"])) == 2
    assert not set(replayed["sessions"]) & set(recorded["sessions"])
    for log in replayed["decisions"]:
        by_operation = {op: d for _m, op, d in log}
        assert by_operation["initialize"] == "replayed-write"
        assert by_operation["tools/call read_notes"] == "shared"


def test_a_sealed_miss_fails_one_tool_call_and_the_session_goes_on(
    stack: Stack, mcp_world: ServerProcess
) -> None:
    """A sealed MCP miss is a JSON-RPC error for that call inside HTTP 200 (before: a 502 that
    ended the SDK's session): the next call of the same session is served from the tape."""
    tape = stack.open_tape()
    (recorder,) = stack.fork(tape, ["recorder"])
    url = f"{mcp_world.url}/mcp"

    async def record() -> str:
        async with mcp_branch(stack.proxy.port, tape, recorder, url) as me:
            await me.session.list_tools()  # the server declares `search` read-only
            return await me.text("search", query="solar")

    recorded = asyncio.run(record())
    stack.seal(tape)
    (replayer,) = stack.fork(tape, ["after-seal"])
    sealed = calls(mcp_world)

    async def replay() -> tuple[str, str, list[str]]:
        async with mcp_branch(stack.proxy.port, tape, replayer, url) as me:
            await me.session.list_tools()
            with pytest.raises(MCPError) as missed:
                await me.session.call_tool("search", {"query": "lunar"})
            again = await me.text("search", query="solar")
            return str(missed.value), again, me.decided("tools/call search")

    message, again, decided = asyncio.run(replay())
    assert "Not on tape" in message and "sealed" in message
    assert again == recorded
    assert decided == ["refused", "shared"]
    assert calls(mcp_world) == sealed


def test_a_tape_recorded_by_one_mcp_client_version_replays_sealed_under_another(
    stack: Stack, mcp_world: ServerProcess
) -> None:
    """`clientInfo` and `params._meta` are protocol noise (engine/protocol_noise.py): a tape
    recorded by one SDK version replays sealed under another (before: `initialize` missed with
    `body field 'params.clientInfo.version'`); a real difference is still named."""
    tape = stack.open_tape()
    (recorder,) = stack.fork(tape, ["as-2.3"])
    url = f"{mcp_world.url}/mcp"
    newer = Implementation(name="mcp", version="2.3.0")
    older = Implementation(name="mcp", version="2.0.0")

    async def record() -> str:
        async with mcp_branch(stack.proxy.port, tape, recorder, url, client_info=newer) as me:
            await me.session.list_tools()
            answer = await me.session.call_tool("search", {"query": "solar"}, meta={"t": "1"})
            block = answer.content[0]
            assert block.type == "text"
            return block.text

    recorded = asyncio.run(record())
    stack.seal(tape)
    (replayer,) = stack.fork(tape, ["as-2.0"])
    sealed = calls(mcp_world)

    async def replay() -> tuple[str, list[tuple[str, str, str]], str]:
        async with mcp_branch(stack.proxy.port, tape, replayer, url, client_info=older) as me:
            await me.session.list_tools()
            again = await me.text("search", query="solar")
            with pytest.raises(MCPError) as missed:
                await me.session.call_tool("search", {"query": "lunar"})
            return again, me.decisions, str(missed.value.error.data)

    again, decisions, problem = asyncio.run(replay())
    assert again == recorded
    assert calls(mcp_world) == sealed
    served = {op: decision for _method, op, decision in decisions if op != "tools/call search"}
    assert served["initialize"] == "replayed-write" and served["tools/list"] == "shared"
    assert "params.arguments.query" in problem and "lunar" in problem
