"""Unit tests of engine/facts.py: an ask, a claim and a recording read as decision facts."""

from __future__ import annotations

from dataclasses import replace

from engine.asks import Ask
from engine.cache import Recorded
from engine.decision import ClaimState, Facts
from engine.dependencies import Classification
from engine.facts import address_of, claim_state, facts_of, recorded_facts
from engine.faults import FaultRule
from engine.keys import RequestKey
from engine.policy import DependencyModel, Mode
from engine.request import RequestParts
from engine.simulation import SIMULATED_HEADER
from engine.tape_settings import FaultKind
from store.models import Claim

READ = Classification(False, frozenset({"host:h"}), frozenset())
WRITE = Classification(True, frozenset(), frozenset({"host:h"}))


def make_ask(**changes: object) -> Ask:
    ask = Ask(
        tape_id=4,
        tape_name="t",
        mode=Mode.GROUNDHOG,
        online=True,
        model=DependencyModel.CLOSURE,
        world_seed=7,
        cooperative=False,
        branch_id=2,
        branch="root/b0",
        request=RequestParts("GET", "https", "h", 443, "/x", (), ()),
        key=RequestKey("v1 GET https://h/x", "k" * 64),
        body_sha="b",
        classification=READ,
        occurrence=3,
        true_fingerprint="tf",
        fingerprint="fp",
    )
    return replace(ask, **changes)


def test_an_ask_gives_the_facts_known_before_any_lookup() -> None:
    facts = facts_of(make_ask())
    assert facts == Facts(
        is_write=False,
        mode=Mode.GROUNDHOG,
        online=True,
        true_fingerprint="tf",
        branch="root/b0",
        passthrough=False,
        fault=False,
        simulator=False,
        simulate_writes=False,
    )
    assert facts.recorded is None and facts.claim is None and not facts.online_confirmed


def test_a_write_with_a_simulator_and_passthrough_is_read_as_such() -> None:
    ask = make_ask(
        classification=WRITE,
        mode=Mode.REPLAY,
        online=False,
        simulator_url="http://sim",
        simulate_writes=True,
    )
    facts = facts_of(ask, passthrough=True)
    assert (facts.is_write, facts.mode, facts.online) == (True, Mode.REPLAY, False)
    assert facts.passthrough and facts.simulator and facts.simulate_writes


def test_only_a_fault_that_replaces_the_answer_is_a_fault_fact() -> None:
    unavailable = FaultRule(FaultKind.UNAVAILABLE, rate=1.0)
    latency = FaultRule(FaultKind.LATENCY, rate=1.0)
    never = FaultRule(FaultKind.UNAVAILABLE, rate=0.0)
    assert facts_of(make_ask(fault_rules=(unavailable,))).fault
    assert not facts_of(make_ask(fault_rules=(latency,))).fault  # a delay, then the tape
    assert not facts_of(make_ask(fault_rules=(never,))).fault


def claim(claim_expires: float) -> Claim:
    return Claim(
        tape_id=4,
        key_hash="k",
        occurrence=0,
        fingerprint="",
        ticket="t",
        claim_expires=claim_expires,
    )


def test_a_claim_is_free_held_until_it_lapses_then_expired() -> None:
    assert claim_state(None, 100.0) is ClaimState.FREE
    assert claim_state(claim(100.5), 100.0) is ClaimState.HELD
    assert claim_state(claim(100.0), 100.0) is ClaimState.HELD  # lapses only after the instant
    assert claim_state(claim(99.5), 100.0) is ClaimState.EXPIRED


def test_a_lookup_tells_whether_it_found_a_recording_and_whose() -> None:
    live = Recorded(1, {"status": 200, "headers": [], "body": ""}, [["X-A", "1"]])
    simulated = Recorded(2, {"status": 200, "headers": [], "body": ""}, [[SIMULATED_HEADER, "1"]])
    assert recorded_facts(None) == {"recorded": False, "simulated_recording": False}
    assert recorded_facts(live) == {"recorded": True, "simulated_recording": False}
    assert recorded_facts(simulated) == {"recorded": True, "simulated_recording": True}
    # The decision's own copy accepts them as they are.
    assert facts_of(make_ask()).updated(**recorded_facts(simulated)).simulated_recording


def test_the_address_is_tape_key_occurrence_and_fingerprint() -> None:
    assert address_of(make_ask()) == (4, "k" * 64, 3, "fp")
    assert address_of(make_ask(fingerprint="")) != address_of(make_ask())
