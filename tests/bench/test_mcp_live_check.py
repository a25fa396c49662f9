"""bench.mcp_live_check: a live MCP rollout re-rendered in process from its session's draws.

Over a real `python -m worldsim --world mcp` process and the official MCP client, a rollout's
reward equals the one computed in process from the call numbers `/_draws` lists, with one HTTP
answer per tool call; in process, a tampered call number changes the re-rendered reward, so the
check can fail; and the paired contrast shift between two phases is upgrade days minus compare.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from bench import mcp_live_check
from bench.groups import agent_seed
from worldsim import mcp_agent, mcp_check, mcp_state

DAY = 500_010


def _in_process(day: int, action: str) -> mcp_live_check.LiveRecord:
    desk = mcp_state.Desk(0)
    desk.open_session("s", day)
    desk.open_session("before", day)
    desk.call("before", "my_trip", {})  # another session's call: the numbers start above 1
    seed = agent_seed(mcp_live_check.AGENT_BASE, day, mcp_live_check.ACTIONS.index(action))
    draws: list[tuple[str, dict[str, object], int]] = []

    def call(tool: str, arguments: dict[str, object]) -> dict[str, object]:
        answer = desk.call("s", tool, arguments)
        draws.append(desk.draws("s")[-1])
        return answer

    rollout = asyncio.run(mcp_agent.run_rollout(mcp_agent.DeskTools(call), action, seed))
    steps = len(rollout.steps)
    return mcp_live_check.LiveRecord(day, action, rollout.reward, steps, steps, 0.0, tuple(draws))


def test_a_record_rerenders_to_its_reward_and_a_tampered_number_does_not() -> None:
    record = _in_process(DAY, "upgrade")
    assert mcp_live_check.rerender(record) == record.reward
    tool, arguments, number = record.draws[1]
    tampered = replace(
        record, draws=(record.draws[0], (tool, arguments, number + 50), *record.draws[2:])
    )
    assert mcp_live_check.rerender(tampered) != record.reward


def test_a_record_whose_draws_name_other_calls_is_refused() -> None:
    record = _in_process(DAY, "compare")
    wrong = replace(record, draws=(("my_trip", {}, 9), *record.draws[1:]))
    with pytest.raises(ValueError, match="the world ran my_trip"):
        mcp_live_check.rerender(wrong)


def test_the_paired_shift_is_the_upgrade_days_minus_the_compare_days() -> None:
    first = {"10": 1.0, "11": 0.5, "12": 2.0, "13": 0.0}
    second = {"10": 1.1, "11": 0.4, "12": 2.3, "13": 0.2}
    shift = mcp_live_check.paired_contrast_shift(first, second)
    assert shift.value == pytest.approx((0.1 + 0.3) / 2 - (-0.1 + 0.2) / 2)


def test_a_live_rollout_rerenders_exactly_with_one_answer_per_tool_call() -> None:
    with mcp_live_check.world_process() as url, mcp_live_check.control_client(url) as control:
        records = [
            asyncio.run(mcp_live_check.live_rollout(url, control, DAY + i, action))
            for i, action in enumerate(("upgrade", "compare"))
        ]
        left = control.get("/_branches").json()["branches"]
    for record in records:
        assert record.tool_answers == record.tool_calls == len(record.draws)
        assert mcp_live_check.rerender(record) == record.reward
    # A desk whose counter stands elsewhere draws other noise: the match is not by construction.
    desk = mcp_state.Desk(0)
    desk.open_session("before", DAY)
    desk.call("before", "my_trip", {})
    seed = agent_seed(mcp_live_check.AGENT_BASE, DAY, 2)
    other = asyncio.run(mcp_check.rollout_on_day(desk, "x", DAY, "upgrade", seed))
    assert other.reward != records[0].reward
    assert left == []  # each session dropped after its draws were read
