"""worldsim/mcp_agent.py: each strategy makes the calls it declares, `upgrade` uses the voucher
only when its trip shows its own hold, and the prefix probe never calls a writing tool."""

from __future__ import annotations

import asyncio
from typing import Any

from worldsim.mcp_agent import ProbeTools, Strategy, ToolReply, run_rollout

FLIGHTS = [
    {"id": "F1", "seats": 3, "quote": "F1:q"},
    {"id": "F2", "seats": 0, "quote": "F2:q"},  # full: never chosen
    {"id": "F3", "seats": 1, "quote": "F3:q"},
]
VALUES = {"F1": 1.0, "F3": 2.0}


class ScriptedDesk:
    """A desk answering from fixed data; `trip_shows` is the hold `my_trip` reports."""

    def __init__(self, trip_shows: str | None = "held") -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []
        self.trip_shows = trip_shows
        self.held: str | None = None

    async def call(self, tool: str, arguments: dict[str, object]) -> ToolReply:
        self.calls.append((tool, dict(arguments)))
        payload: dict[str, Any]
        if tool == "search_flights":
            payload = {"flights": FLIGHTS}
        elif tool == "flight_details":
            flight = str(arguments["flight"])
            payload = {"value": VALUES[flight], "fare": 0.5, "quote": f"{flight}:q"}
        elif tool == "hold":
            self.held = str(arguments["quote"]).split(":")[0]
            payload = {"held": self.held}
        elif tool == "my_trip":
            hold = self.held if self.trip_shows == "held" else self.trip_shows
            payload = {"hold": hold, "voucher": {"code": "UPGRADE-X", "amount": 0.2}}
        else:  # book
            payload = {"flight": self.held, "value": VALUES[str(self.held)], "total": 0.3}
        return ToolReply({**payload, "latency_ms": 10.0})


def tools_called(desk: ScriptedDesk) -> list[str]:
    return [tool for tool, _ in desk.calls]


def test_first_books_the_first_flight_with_seats_without_comparing() -> None:
    desk = ScriptedDesk()
    rollout = asyncio.run(run_rollout(desk, "first", agent_seed=1))
    assert tools_called(desk) == ["search_flights", "hold", "book"]
    assert rollout.flight == "F1" and rollout.voucher_seen is None
    assert len(rollout.steps) == 3 and rollout.latency_cost > 0


def test_compare_and_upgrade_book_the_best_value_and_upgrade_reads_its_trip() -> None:
    compare_desk, upgrade_desk = ScriptedDesk(), ScriptedDesk()
    compared = asyncio.run(run_rollout(compare_desk, Strategy.COMPARE, agent_seed=2))
    upgraded = asyncio.run(run_rollout(upgrade_desk, Strategy.UPGRADE, agent_seed=2))
    assert compared.flight == upgraded.flight == "F3"
    assert "my_trip" not in tools_called(compare_desk)
    assert tools_called(upgrade_desk)[-2:] == ["my_trip", "book"]
    assert upgrade_desk.calls[-1] == ("book", {"voucher": "UPGRADE-X"})
    assert upgraded.saw_own_write is True


def test_a_trip_that_does_not_show_the_own_hold_gets_no_voucher_used() -> None:
    desk = ScriptedDesk(trip_shows=None)  # a stale read: the base state, before the hold
    rollout = asyncio.run(run_rollout(desk, Strategy.UPGRADE, agent_seed=3))
    assert rollout.saw_own_write is False
    assert desk.calls[-1] == ("book", {})


def test_the_probe_passes_reads_through_and_answers_writes_itself() -> None:
    desk = ScriptedDesk()
    asyncio.run(run_rollout(ProbeTools(desk), Strategy.UPGRADE, agent_seed=4))
    assert "hold" not in tools_called(desk) and "book" not in tools_called(desk)
    assert "my_trip" in tools_called(desk) and "flight_details" in tools_called(desk)
