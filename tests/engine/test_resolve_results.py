"""Unit tests of engine/resolve_results.py: which results still need the tape's simulator."""

from __future__ import annotations

from engine.policy import Action, Decision
from engine.resolve_results import Resolution, Waiting, wants_simulator
from tests.engine.test_facts import make_ask


def test_only_a_claimed_simulated_forward_wants_the_simulator() -> None:
    ask = make_ask(simulator_url="http://sim")
    claimed = Resolution(Action.FORWARD, Decision.SIMULATED, ask, ticket="t")
    assert wants_simulator(claimed)
    assert not wants_simulator(Resolution(Action.FORWARD, Decision.SIMULATED, ask))  # no ticket
    assert not wants_simulator(Resolution(Action.SERVE, Decision.SIMULATED, ask, ticket="t"))
    assert not wants_simulator(Resolution(Action.FORWARD, Decision.RECORDED, ask, ticket="t"))
    assert not wants_simulator(Waiting(ask, Decision.RECORDED, 1.0))


def test_a_resolution_defaults_to_no_response_no_headers_no_delay() -> None:
    first = Resolution(Action.FORWARD, Decision.RECORDED, make_ask())
    second = Resolution(Action.FORWARD, Decision.RECORDED, make_ask())
    assert (first.ticket, first.response, first.response_json, first.delay_ms) == (
        None,
        None,
        None,
        0,
    )
    first.upstream_headers.append(["X", "1"])
    assert second.upstream_headers == []  # each result has its own list
