"""Cell-by-cell tests of fault decisions: keyed draws, rule matching, the injected answers."""

from __future__ import annotations

import base64
import json

import pytest

from engine.faults import (
    FAULT_HEADER,
    Fault,
    FaultRule,
    decide_fault,
    draw,
    injected_response,
    rules_of,
)
from engine.tape_settings import FaultKind, stored_settings


def decide(
    rules: list[FaultRule],
    *,
    key: str = "k",
    occurrence: int = 0,
    fingerprint: str = "",
    method: str = "GET",
    host: str = "api.test",
    path: str = "/search",
    seed: int = 7,
):
    return decide_fault(
        rules,
        world_seed=seed,
        method=method,
        host=host,
        path=path,
        key_hash=key,
        occurrence=occurrence,
        fingerprint=fingerprint,
    )


def test_draw_is_a_keyed_function_of_seed_and_address() -> None:
    assert draw(7, 0, "k", 0, "") == draw(7, 0, "k", 0, "")
    others = {
        draw(8, 0, "k", 0, ""),
        draw(7, 1, "k", 0, ""),
        draw(7, 0, "j", 0, ""),
        draw(7, 0, "k", 1, ""),
        draw(7, 0, "k", 0, "fp"),
    }
    assert len(others) == 5 and draw(7, 0, "k", 0, "") not in others
    assert all(0.0 <= value < 1.0 for value in others)


def test_rate_is_met_on_average_and_zero_and_one_are_exact() -> None:
    rule = FaultRule(FaultKind.UNAVAILABLE, rate=0.3)
    hits = sum(decide([rule], key=f"k{i}") is not None for i in range(4000))
    assert 0.25 < hits / 4000 < 0.35
    assert all(decide([FaultRule(FaultKind.RESET, 1.0)], key=f"k{i}") for i in range(50))
    assert not any(decide([FaultRule(FaultKind.RESET, 0.0)], key=f"k{i}") for i in range(50))


@pytest.mark.parametrize(
    ("rule", "matches"),
    [
        (FaultRule(FaultKind.RESET, 1.0, host="api.test"), True),
        (FaultRule(FaultKind.RESET, 1.0, host="API.test"), True),
        (FaultRule(FaultKind.RESET, 1.0, host="other.test"), False),
        (FaultRule(FaultKind.RESET, 1.0, path="/search"), True),
        (FaultRule(FaultKind.RESET, 1.0, path="/sea*"), True),
        (FaultRule(FaultKind.RESET, 1.0, path="/docs/*"), False),
        (FaultRule(FaultKind.RESET, 1.0, methods=("POST",)), False),
        (FaultRule(FaultKind.RESET, 1.0, methods=("GET",)), True),
    ],
)
def test_rules_match_host_route_and_method(rule: FaultRule, matches: bool) -> None:
    assert (decide([rule]) is not None) is matches


def test_the_first_matching_rule_decides_alone() -> None:
    never = FaultRule(FaultKind.RESET, 0.0, path="/search")
    always = FaultRule(FaultKind.UNAVAILABLE, 1.0)
    assert decide([never, always]) is None
    assert decide([always, never]) == Fault(FaultKind.UNAVAILABLE, always)
    assert decide([FaultRule(FaultKind.RESET, 1.0, host="x"), always]).kind is FaultKind.UNAVAILABLE


def test_injected_answers_say_so_and_carry_retry_after() -> None:
    def answer(kind: FaultKind, **rule: object) -> dict:
        fault = Fault(kind, FaultRule(kind, 1.0, **rule))
        return injected_response(fault, tape="t", request_key="v1 GET x", occurrence=2)

    limited = answer(FaultKind.TOO_MANY_REQUESTS, retry_after=5)
    assert limited["status"] == 429
    assert [FAULT_HEADER, "429"] in limited["headers"] and ["Retry-After", "5"] in limited[
        "headers"
    ]
    problem = json.loads(base64.b64decode(limited["body"]))
    assert problem["fault"] == "429" and problem["occurrence"] == 2
    assert answer(FaultKind.UNAVAILABLE)["status"] == 503
    timeout = answer(FaultKind.TIMEOUT)
    assert timeout["status"] == 504 and not any(h[0] == "Retry-After" for h in timeout["headers"])
    assert [FAULT_HEADER, "reset"] in answer(FaultKind.RESET)["headers"]
    assert answer(FaultKind.UNAVAILABLE) == answer(FaultKind.UNAVAILABLE)  # same bytes


def test_delays_and_what_replaces_the_answer() -> None:
    latency = Fault(FaultKind.LATENCY, FaultRule(FaultKind.LATENCY, 1.0, latency_ms=250))
    hold = Fault(FaultKind.TIMEOUT, FaultRule(FaultKind.TIMEOUT, 1.0, hold_ms=1500))
    assert (latency.replaces_answer, latency.delay_ms) == (False, 250)
    assert (hold.replaces_answer, hold.delay_ms) == (True, 1500)
    assert Fault(FaultKind.RESET, FaultRule(FaultKind.RESET, 1.0)).delay_ms == 0


def test_rules_of_a_stored_config() -> None:
    stored = {"faults": [{"kind": "429", "rate": 0.5, "methods": ["get"]}]}
    rules = rules_of(stored_settings(stored))
    assert rules == [FaultRule(FaultKind.TOO_MANY_REQUESTS, 0.5, methods=("GET",))]
    assert rules_of(stored_settings({})) == []
