"""Unit tests of the one decision path (engine/decision.py), cell by cell, with no store."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.decision import (
    LOOKUPS,
    ClaimState,
    Facts,
    Plan,
    Step,
    decide_step,
    looks_up,
)
from engine.policy import Action, Decision, Mode

READ = Facts(
    is_write=False, mode=Mode.GROUNDHOG, online=True, true_fingerprint="", branch="root/b0"
)
CONFIRMED = replace(READ, online_confirmed=True)
SEALED = replace(READ, online=False, online_confirmed=True)
WRITE = replace(CONFIRMED, is_write=True, true_fingerprint="w")

CELLS: list[tuple[str, Facts, Plan]] = [
    # What the decision asks for before it can answer.
    ("a read first looks up", READ, Plan(Step.LOOK_UP)),
    ("a sealed read looks up", replace(READ, online=False), Plan(Step.LOOK_UP)),
    ("an online write needs no lookup", replace(WRITE, online_confirmed=False),
     Plan(Step.CONFIRM_ONLINE)),
    ("an online naive read needs no lookup", replace(READ, mode=Mode.NAIVE),
     Plan(Step.CONFIRM_ONLINE)),
    ("passthrough needs no lookup", replace(READ, passthrough=True), Plan(Step.CONFIRM_ONLINE)),
    ("a miss confirms online before claiming", replace(READ, recorded=False),
     Plan(Step.CONFIRM_ONLINE)),
    ("a sealed miss confirms before refusing", replace(READ, online=False, recorded=False),
     Plan(Step.CONFIRM_ONLINE)),
    ("a confirmed miss claims", replace(CONFIRMED, recorded=False),
     Plan(Step.CLAIM, None, Decision.RECORDED)),
    ("a miss at a true fingerprint refetches",
     replace(CONFIRMED, recorded=False, true_fingerprint="f"),
     Plan(Step.CLAIM, None, Decision.REFETCHED)),
    ("a lapsed claim is taken over", replace(CONFIRMED, recorded=False, claim=ClaimState.EXPIRED),
     Plan(Step.TAKE_OVER, None, Decision.RECORDED)),
    # Final steps.
    ("a hit is served without confirming online", replace(READ, recorded=True),
     Plan(Step.SERVE, Action.SERVE, Decision.SHARED)),
    ("a sealed hit is served", replace(READ, online=False, recorded=True),
     Plan(Step.SERVE, Action.SERVE, Decision.SHARED)),
    ("replay serves the stale base", replace(READ, mode=Mode.REPLAY, true_fingerprint="f",
                                             recorded=True),
     Plan(Step.SERVE, Action.SERVE, Decision.STALE)),
    ("the simulator's recording is served as simulated",
     replace(READ, recorded=True, simulated_recording=True),
     Plan(Step.SERVE, Action.SERVE, Decision.SIMULATED)),
    ("a hit found after our claim is served", replace(CONFIRMED, recorded=True,
                                                      claim=ClaimState.OURS),
     Plan(Step.SERVE, Action.SERVE, Decision.SHARED)),
    ("a claimed miss is forwarded", replace(CONFIRMED, recorded=False, claim=ClaimState.OURS),
     Plan(Step.FORWARD, Action.FORWARD, Decision.RECORDED)),
    ("a held claim waits", replace(CONFIRMED, recorded=False, claim=ClaimState.HELD),
     Plan(Step.WAIT, Action.WAIT, Decision.RECORDED)),
    ("a held claim waits without confirming online", replace(READ, recorded=False,
                                                             claim=ClaimState.HELD),
     Plan(Step.WAIT, Action.WAIT, Decision.RECORDED)),
    ("a sealed miss is refused", replace(SEALED, recorded=False),
     Plan(Step.REFUSE, Action.SERVE, Decision.REFUSED)),
    ("a sealed miss is refused even while someone holds it",
     replace(SEALED, recorded=False, claim=ClaimState.HELD),
     Plan(Step.REFUSE, Action.SERVE, Decision.REFUSED)),
    ("an online write is forwarded without single flight", WRITE,
     Plan(Step.FORWARD, Action.FORWARD, Decision.WRITE)),
    ("a sealed write is replayed", replace(WRITE, online=False, recorded=True),
     Plan(Step.SERVE, Action.SERVE, Decision.REPLAYED_WRITE)),
    ("a sealed unrecorded write is refused", replace(WRITE, online=False, recorded=False),
     Plan(Step.REFUSE, Action.SERVE, Decision.REFUSED)),
    ("an online naive read is forwarded", replace(CONFIRMED, mode=Mode.NAIVE),
     Plan(Step.FORWARD, Action.FORWARD, Decision.RECORDED)),
    ("a sealed naive read is served", replace(READ, mode=Mode.NAIVE, online=False,
                                              recorded=True),
     Plan(Step.SERVE, Action.SERVE, Decision.SHARED)),
    ("passthrough passes", replace(CONFIRMED, passthrough=True),
     Plan(Step.PASS, Action.FORWARD, Decision.PASSTHROUGH)),
    ("sealed passthrough is refused", replace(SEALED, passthrough=True),
     Plan(Step.REFUSE, Action.SERVE, Decision.REFUSED)),
    ("a fault answers first", replace(READ, fault=True, recorded=True),
     Plan(Step.INJECT, Action.SERVE, Decision.INJECTED)),
    ("a fault needs no lookup", replace(READ, fault=True),
     Plan(Step.INJECT, Action.SERVE, Decision.INJECTED)),
    # Simulators: a sealed miss is claimed and answered by the tape's simulator.
    ("a sealed read miss is simulated", replace(SEALED, recorded=False, simulator=True),
     Plan(Step.CLAIM, None, Decision.SIMULATED)),
    ("a simulated claim held by another waits",
     replace(SEALED, recorded=False, simulator=True, claim=ClaimState.HELD),
     Plan(Step.WAIT, Action.WAIT, Decision.SIMULATED)),
    ("a simulated claim of ours is forwarded to the simulator",
     replace(SEALED, recorded=False, simulator=True, claim=ClaimState.OURS),
     Plan(Step.FORWARD, Action.FORWARD, Decision.SIMULATED)),
    ("a sealed write miss is not simulated by default",
     replace(WRITE, online=False, recorded=False, simulator=True),
     Plan(Step.REFUSE, Action.SERVE, Decision.REFUSED)),
    ("a sealed write miss is simulated when the tape allows",
     replace(WRITE, online=False, recorded=False, simulator=True, simulate_writes=True),
     Plan(Step.CLAIM, None, Decision.SIMULATED)),
    ("sealed passthrough is never simulated", replace(SEALED, passthrough=True, simulator=True),
     Plan(Step.REFUSE, Action.SERVE, Decision.REFUSED)),
    ("an online miss is never simulated", replace(CONFIRMED, recorded=False, simulator=True),
     Plan(Step.CLAIM, None, Decision.RECORDED)),
]  # fmt: skip


@pytest.mark.parametrize(("facts", "plan"), [cell[1:] for cell in CELLS], ids=[c[0] for c in CELLS])
def test_decision_cells(facts: Facts, plan: Plan) -> None:
    assert decide_step(facts) == plan


def test_a_hit_is_one_lookup_then_serve() -> None:
    """The fast path is this function with one fact filled in, not a second copy."""
    assert decide_step(READ).step is Step.LOOK_UP
    served = decide_step(replace(READ, recorded=True))
    assert served.final and served.step is Step.SERVE


facts_strategy = st.builds(
    Facts,
    is_write=st.booleans(),
    mode=st.sampled_from(list(Mode)),
    online=st.booleans(),
    true_fingerprint=st.sampled_from(["", "f"]),
    branch=st.just("root/b0"),
    passthrough=st.booleans(),
    fault=st.booleans(),
    simulator=st.booleans(),
    simulate_writes=st.booleans(),
    recorded=st.sampled_from([None, False, True]),
    simulated_recording=st.booleans(),
    online_confirmed=st.booleans(),
    claim=st.sampled_from([None, *ClaimState]),
)


@given(facts_strategy)
def test_invariants_of_every_step(facts: Facts) -> None:
    plan = decide_step(facts)
    if plan.final:
        assert plan.action is not None and plan.decision is not None
    else:
        assert plan.step in LOOKUPS
    if plan.step in {Step.PASS, Step.FORWARD, Step.CLAIM, Step.TAKE_OVER, Step.REFUSE}:
        assert facts.online_confirmed  # nothing starts or refuses on an unlocked online flag
    if plan.action is Action.FORWARD and plan.decision is not Decision.SIMULATED:
        assert facts.online  # a sealed tape never goes to the world
    if plan.step is Step.LOOK_UP:
        assert facts.recorded is None and looks_up(facts)
    if plan.step is Step.WAIT or plan.step is Step.CLAIM:
        assert not facts.is_write or plan.decision is Decision.SIMULATED  # writes never wait
        assert facts.mode is not Mode.NAIVE or plan.decision is Decision.SIMULATED


@given(facts_strategy)
def test_the_loop_always_ends(facts: Facts) -> None:
    """Answering every lookup (as the resolver does) reaches a final step in a few rounds."""
    for _ in range(6):
        plan = decide_step(facts)
        if plan.final:
            return
        if plan.step is Step.LOOK_UP:
            facts = replace(facts, recorded=False)
        elif plan.step is Step.CONFIRM_ONLINE:
            facts = replace(facts, online_confirmed=True)
        else:  # a claim or takeover won: look again, as someone may have recorded meanwhile
            facts = replace(facts, claim=ClaimState.OURS, recorded=None)
    raise AssertionError(f"no final step from {facts}")


def test_updated_is_replace_without_init_and_refuses_unknown_fields() -> None:
    start = Facts(is_write=False, mode=Mode.GROUNDHOG, online=True, true_fingerprint="", branch="b")
    changed = start.updated(recorded=True, claim=ClaimState.HELD)
    assert changed == replace(start, recorded=True, claim=ClaimState.HELD)
    assert hash(changed) == hash(replace(start, recorded=True, claim=ClaimState.HELD))
    assert start.recorded is None and start.claim is None  # the original is untouched
    with pytest.raises(TypeError, match="nope"):
        start.updated(nope=1)
