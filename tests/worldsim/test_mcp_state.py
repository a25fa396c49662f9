"""worldsim.mcp_state's draw log: each session's calls with the world call number of their noise.

The MCP bias check (bench/mcp_live_check.py) re-renders a live rollout in process from the
call numbers its session drew; that is only a proof if the log names every call in order and a
call given its number answers exactly what the world answered.
"""

from __future__ import annotations

import pytest

from worldsim import mcp_state
from worldsim.errors import UnknownSession

DAY = 777


def test_a_sessions_draws_name_each_call_and_rerender_its_answers_exactly() -> None:
    desk = mcp_state.Desk(3)
    desk.open_session("other", DAY)
    desk.open_session("mine", DAY)
    desk.call("other", "search_flights", {})  # another session's call takes a number between
    answers = [
        desk.call("mine", "search_flights", {}),
        desk.call("mine", "flight_details", {"flight": "f2"}),
    ]
    draws = desk.draws("mine")
    assert [(tool, number) for tool, _, number in draws] == [
        ("search_flights", 2),
        ("flight_details", 3),
    ]
    fresh = mcp_state.Desk(3)
    fresh.open_session("again", DAY)
    again = [fresh.call("again", tool, args, call_number=n) for tool, args, n in draws]
    assert again == answers
    # Without the numbers a fresh desk draws its own noise: the answers differ.
    fresh.open_session("own", DAY)
    assert fresh.call("own", "search_flights", {}) != answers[0]


def test_a_dropped_session_has_no_draws() -> None:
    desk = mcp_state.Desk(0)
    desk.open_session("gone", DAY)
    desk.call("gone", "my_trip", {})
    desk.reset("gone")
    with pytest.raises(UnknownSession):
        desk.draws("gone")
