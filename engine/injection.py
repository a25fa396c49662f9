"""Where the resolve path meets the tape's `faults` (the decisions are in `engine/faults.py`).

Kept apart from the resolve path so it only carries three small hooks: skip the hit path when
a fault replaces the answer (`facts.py`), serve an injected answer (`final_steps.py`: event
`injected`, nothing forwarded, nothing recorded), and add a latency fault's delay to whatever
the ask resolved to (`resolution.py`).
"""

from __future__ import annotations

from dataclasses import replace

from engine.asks import Ask
from engine.faults import Fault, decide_fault, injected_response
from engine.resolve_results import Resolution, Waiting
from groundhog.protocol.wire import WireResponse


def fault_for(ask: Ask) -> Fault | None:
    if not ask.fault_rules:
        return None
    return decide_fault(
        ask.fault_rules,
        world_seed=ask.world_seed,
        method=ask.request.method,
        host=ask.request.normalised_host,
        path=ask.request.path,
        key_hash=ask.key.hash,
        occurrence=ask.occurrence,
        fingerprint=ask.fingerprint,
    )


def replacing_fault(ask: Ask) -> Fault | None:
    """A fault that answers instead of the tape or the world (not a mere latency)."""
    fault = fault_for(ask)
    return fault if fault is not None and fault.replaces_answer else None


def injected(ask: Ask, fault: Fault) -> WireResponse:
    return injected_response(
        fault, tape=ask.tape_name, request_key=ask.key.readable, occurrence=ask.occurrence
    )


def with_delay(result: Resolution | Waiting) -> Resolution | Waiting:
    """The resolution with its fault's delay (`delay_ms`): latency, or a timeout's hold.

    Only a final answer carries it (a single-flight `Waiting` gets it when it resolves), so an
    ask is delayed once. The proxy does the waiting, off the resolver's threads.
    """
    if isinstance(result, Waiting) or not result.ask.fault_rules:
        return result
    fault = fault_for(result.ask)
    if fault is None or fault.delay_ms == 0:
        return result
    return replace(result, delay_ms=fault.delay_ms)
