"""The MCP world over real loopback TCP, driven by the official MCP client (mcp >= 2).

`python -m worldsim --world mcp` as a child process: it answers health, declares its read-only
and writing tools, keeps one trip per MCP session (a hold in one session is invisible to
another's `my_trip`), draws seeded noise (the same seed and calls give the same bytes, in
process and over TCP; a different seed does not), and its oracle grades a read served before a
hold as stale for the session that held. The in-process check ranks the strategies as the
protocol declares, with the gap near the declared one.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Iterator

import httpx
import pytest

from bench import claims
from tests.support.servers import ServerProcess, running_server, start_server
from worldsim import mcp_check, mcp_client, mcp_desk, mcp_state
from worldsim.agent import LATENCY_COST_PER_SECOND

DAY = 4242


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[ServerProcess]:
    server = start_server(["worldsim", "--world", "mcp", "--seed", "5"])
    try:
        yield server
    finally:
        server.stop()


def control(server: ServerProcess, method: str, path: str, **kwargs: object) -> dict:
    answer = httpx.request(method, f"{server.url}{path}", timeout=30, trust_env=False, **kwargs)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_health_answers_ok(mcp_server: ServerProcess) -> None:
    answer = httpx.get(f"{mcp_server.url}/healthz", timeout=10, trust_env=False)
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})


def test_tools_declare_which_only_read(mcp_server: ServerProcess) -> None:
    async def listed(url: str) -> dict[str, bool | None]:
        async with mcp_client.open_tools(url) as tools:
            result = await tools.session.list_tools()
        return {
            tool.name: tool.annotations.read_only_hint if tool.annotations else None
            for tool in result.tools
        }

    hints = asyncio.run(listed(mcp_client.endpoint(mcp_server.url, DAY)))
    assert hints == {
        "search_flights": True,
        "flight_details": True,
        "my_trip": True,
        "hold": False,
        "book": False,
    }


async def _two_sessions(url: str) -> dict[str, object]:
    async with (
        mcp_client.open_tools(url) as holder,
        mcp_client.open_tools(url) as other,
    ):
        before = (await holder.call("my_trip", {})).payload
        flights = (await holder.call("search_flights", {})).payload["flights"]
        bookable = next(flight for flight in flights if flight["seats"])
        await holder.call("hold", {"quote": bookable["quote"]})
        return {
            "sessions": (holder.session_id, other.session_id),
            "before": before,
            "held": bookable["id"],
            "holder": (await holder.call("my_trip", {})).payload,
            "other": (await other.call("my_trip", {})).payload,
        }


def test_each_mcp_session_has_its_own_trip(mcp_server: ServerProcess) -> None:
    seen = asyncio.run(_two_sessions(mcp_client.endpoint(mcp_server.url, DAY)))

    holder_id, other_id = seen["sessions"]
    assert holder_id and other_id and holder_id != other_id
    assert seen["before"]["hold"] is None and seen["before"]["voucher"] is None
    held = seen["held"]
    assert seen["holder"]["hold"] == held
    assert seen["holder"]["voucher"]["code"] == f"UPGRADE-{held}"
    assert seen["holder"]["voucher"]["amount"] == mcp_desk.voucher_amount(DAY, held)
    # The other session's trip is untouched by the hold.
    assert seen["other"]["hold"] is None and seen["other"]["voucher"] is None
    branches = control(mcp_server, "GET", "/_stats")["branches"]
    assert branches[holder_id]["hold"] == 1 and "hold" not in branches[other_id]
    # The oracle: the holder's first my_trip (before the hold) is stale for it now, and true
    # for the session that did not hold; the holder's own later read is true.
    first, later = seen["before"]["request_id"], seen["holder"]["request_id"]
    graded = control(
        mcp_server,
        "POST",
        "/_oracle/served",
        json={
            "reads": [
                {"request_id": first, "sandbox": holder_id},
                {"request_id": first, "sandbox": other_id},
                {"request_id": later, "sandbox": holder_id},
            ]
        },
    )["results"]
    assert [(r["stale"], r["changed"]) for r in graded] == [
        (True, True),
        (False, False),
        (False, True),
    ]
    # Dropping a session's sandbox (the benchmark's rollback) leaves the other's.
    assert control(mcp_server, "POST", "/_reset", params={"branch": holder_id})["dropped"] == [
        holder_id
    ]
    assert holder_id not in control(mcp_server, "GET", "/_branches")["branches"]
    assert other_id in control(mcp_server, "GET", "/_branches")["branches"]


def _play(desk: mcp_state.Desk) -> list[dict[str, object]]:
    """A fixed sequence of calls in one session on DAY, in process."""
    desk.open_session("s", DAY)
    answers = [desk.call("s", "search_flights", {}), desk.call("s", "search_flights", {})]
    answers += [desk.call("s", "flight_details", {"flight": "f3"})]
    return answers


async def _play_over_mcp(url: str) -> list[dict[str, object]]:
    async with mcp_client.open_tools(url) as tools:
        return [
            (await tools.call("search_flights", {})).payload,
            (await tools.call("search_flights", {})).payload,
            (await tools.call("flight_details", {"flight": "f3"})).payload,
        ]


def test_noise_is_seeded_per_call_and_the_same_over_tcp_as_in_process() -> None:
    first, twin, other = (
        _play(mcp_state.Desk(11)),
        _play(mcp_state.Desk(11)),
        _play(mcp_state.Desk(12)),
    )
    assert first == twin  # the same seed and calls: the same answers, ids included
    assert first != other  # another seed: another draw
    one, again = first[0]["flights"], first[1]["flights"]
    # Per call: asking twice gives fresh fares and a fresh ranking (at least one differs).
    assert [f["fare"] for f in sorted(one, key=lambda f: f["id"])] != [
        f["fare"] for f in sorted(again, key=lambda f: f["id"])
    ]
    with running_server(["worldsim", "--world", "mcp", "--seed", "11"]) as server:
        served = asyncio.run(_play_over_mcp(mcp_client.endpoint(server.url, DAY)))
    assert served == first


def test_the_strategies_rank_as_declared_and_the_gap_is_near_the_declared_one() -> None:
    rewards = mcp_check.in_process_rewards(range(10_000, 10_600))
    means = {name: statistics.mean(values) for name, values in rewards.items()}
    assert means["upgrade"] > means["compare"] > means["first"]
    gaps = [u - c for u, c in zip(rewards["upgrade"], rewards["compare"], strict=True)]
    stderr = statistics.stdev(gaps) / len(gaps) ** 0.5
    declared = claims.load()["world"]["mcp"]["true_gap"]
    assert declared == pytest.approx(mcp_desk.declared_gap(LATENCY_COST_PER_SECOND), abs=5e-4)
    assert abs(statistics.mean(gaps) - declared) < 3 * stderr


def test_sharing_the_groups_reads_removes_most_of_the_contrast_variance() -> None:
    days = range(20_000, 20_200)
    independent = mcp_check.group_contrasts(days, shared=False)
    shared = mcp_check.group_contrasts(days, shared=True)
    assert statistics.variance(independent) > 4 * statistics.variance(shared)
