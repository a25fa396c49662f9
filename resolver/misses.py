"""The sealed-miss answer with its near-miss explanations (the store side of `near_miss`).

The resolve path calls `sealed_miss` when a sealed tape has nothing at an address; it gathers
candidate recordings from the store and renders the 502 problem, so carrying out a refusal
(resolver/final_steps.py) needs only one call and the explaining stays a pure function.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from engine.asks import Ask
from engine.near_miss import NearMiss, Recording, explain, other_key_versions
from groundhog.protocol.wire import WireResponse
from resolver import answers
from store import nearby


def _recorded(session: Session, ask: Ask) -> dict[str, list[Recording]]:
    candidates = nearby.recorded_addresses(
        ask.tape_id, ask.request.method, ask.request.normalised_host, session=session
    )
    return {
        key: [Recording(occurrence, fingerprint) for occurrence, fingerprint in addresses]
        for key, addresses in candidates.items()
    }


def _explained(ask: Ask, recorded: dict[str, list[Recording]]) -> list[NearMiss]:
    return explain(
        ask.key.readable, recorded, occurrence=ask.occurrence, fingerprint=ask.fingerprint
    )


def near_misses(session: Session, ask: Ask) -> list[NearMiss]:
    return _explained(ask, _recorded(session, ask))


def sealed_miss(session: Session, ask: Ask, **extras: Any) -> WireResponse:
    """The wire response of a sealed miss: a 502 problem naming the nearest recordings, and
    the older key versions the tape holds recordings under (they miss until re-recorded)."""
    recorded = _recorded(session, ask)
    versions = other_key_versions(ask.key.readable, recorded)
    return answers.refused(ask, _explained(ask, recorded), other_key_versions=versions, **extras)
