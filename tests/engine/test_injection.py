"""Where faults meet the resolve path: a latency fault's delay is added once, to a final answer."""

from __future__ import annotations

from engine.faults import FaultRule
from engine.injection import replacing_fault, with_delay
from engine.policy import Action, Decision
from engine.resolve_results import Resolution, Waiting
from engine.tape_settings import FaultKind
from tests.engine.test_facts import make_ask

LATENCY = FaultRule(FaultKind.LATENCY, 1.0, latency_ms=250)


def test_a_latency_fault_delays_a_final_answer_and_replaces_nothing() -> None:
    ask = make_ask(fault_rules=(LATENCY,))
    served = Resolution(Action.SERVE, Decision.SHARED, ask)
    assert with_delay(served).delay_ms == 250
    assert served.delay_ms == 0  # a copy: the cached result is not changed
    assert replacing_fault(ask) is None


def test_a_waiting_answer_and_an_ask_without_faults_are_not_delayed() -> None:
    waiting = Waiting(make_ask(fault_rules=(LATENCY,)), Decision.RECORDED, 1.0)
    assert with_delay(waiting) is waiting  # delayed once, when it resolves
    plain = Resolution(Action.SERVE, Decision.SHARED, make_ask())
    assert with_delay(plain) is plain


def test_a_fault_that_never_fires_adds_no_delay() -> None:
    never = FaultRule(FaultKind.LATENCY, 0.0, latency_ms=250)
    served = Resolution(Action.SERVE, Decision.SHARED, make_ask(fault_rules=(never,)))
    assert with_delay(served) is served
