"""The decision's facts as the resolve path reads them: from an ask, a claim row, a recording.

`decision.decide_step` is pure and knows nothing of asks, store rows or cached answers; these
small functions translate each into `Facts` fields, and name the address every lookup is made
at. They are shared by a first resolve and a single-flight poll (resolver/resolution.py), which
must start from the same facts for the one decision path to decide alike; without them each
would spell the translation out again, and a poll could decide differently from a resolve.
"""

from __future__ import annotations

import hashlib

from engine import injection
from engine.asks import Ask
from engine.cache import Address, Recorded
from engine.decision import ClaimState, Facts
from engine.refs import ClaimRow
from engine.simulation import is_simulated


def facts_of(ask: Ask, *, passthrough: bool = False) -> Facts:
    """What the ask itself tells the decision, before any lookup."""
    return Facts(
        is_write=ask.classification.is_write,
        mode=ask.mode,
        online=ask.online,
        true_fingerprint=ask.true_fingerprint,
        branch=ask.branch,
        passthrough=passthrough,
        fault=injection.replacing_fault(ask) is not None,
        simulator=bool(ask.simulator_url),
        simulate_writes=ask.simulate_writes,
    )


def claim_state(claim: ClaimRow | None, now: float, *, waited_on: str | None = None) -> ClaimState:
    """A claim row's state at wall time `now`: a claim that lapses exactly now still holds.

    A failed claim is `FAILED` only to an ask that waited on that very attempt (`waited_on`,
    the `holder_of` its wait token names); to anyone else it is an expired claim to take over,
    so the next ask tries again, once for the group."""
    if claim is None:
        return ClaimState.FREE
    if claim.failure is not None and waited_on is not None and waited_on == holder_of(claim):
        return ClaimState.FAILED
    return ClaimState.HELD if claim.claim_expires >= now else ClaimState.EXPIRED


def holder_of(claim: ClaimRow) -> str:
    """Which attempt holds the claim, as a waiter may know it: a digest of its ticket (the
    ticket itself would let the waiter's proxy record in the holder's name)."""
    return hashlib.sha256(claim.ticket.encode()).hexdigest()[:32]


def recorded_facts(found: Recorded | None) -> dict[str, bool]:
    """What looking up the address found: a recording, and whether the simulator made it."""
    simulated = found is not None and is_simulated(found.response_headers)
    return {"recorded": found is not None, "simulated_recording": simulated}


def address_of(ask: Ask) -> Address:
    """Where the ask's answer, claim and pending record live: tape, key, occurrence, fingerprint."""
    return (ask.tape_id, ask.key.hash, ask.occurrence, ask.fingerprint)
