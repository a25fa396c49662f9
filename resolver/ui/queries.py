"""Read-only queries the viewer needs beyond the store's own: one address across branches.

The admin API pages events by branch; comparing an address (request key + occurrence) across
sibling branches, and finding the writes that split their fingerprints, needs lookups by key
that no route makes. Like the store's repository functions these take a `session` keyword and
never commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.models import Branch, Event


@dataclass(frozen=True)
class AddressEvent:
    branch: str
    seq: int
    decision: str
    fingerprint: str
    exchange_id: int | None
    method: str
    url: str


@dataclass(frozen=True)
class WriteEvent:
    seq: int
    method: str
    url: str
    decision: str


def address_events(
    tape_id: int, key_hash: str, occurrence: int, branches: list[str], *, session: Session
) -> dict[str, AddressEvent]:
    """The event at this address in each of `branches` that asked it (first ask wins)."""
    query = (
        select(
            Branch.path,
            Event.seq,
            Event.decision,
            Event.fingerprint,
            Event.exchange_id,
            Event.method,
            Event.url,
        )
        .join(Branch, Branch.id == Event.branch_id)
        .where(
            Branch.tape_id == tape_id,
            Branch.path.in_(branches),
            Event.key_hash == key_hash,
            Event.occurrence == occurrence,
        )
        .order_by(Event.seq)
    )
    found: dict[str, AddressEvent] = {}
    for row in session.execute(query):
        found.setdefault(row.path, AddressEvent(*row))
    return found


def writes_before(
    tape_id: int, branch: str, seq: int, *, session: Session, limit: int = 20
) -> list[WriteEvent]:
    """The branch's own writes before its event `seq`: what can have changed a fingerprint."""
    query = (
        select(Event.seq, Event.method, Event.url, Event.decision)
        .join(Branch, Branch.id == Event.branch_id)
        .where(
            Branch.tape_id == tape_id,
            Branch.path == branch,
            Event.seq < seq,
            Event.is_read.is_(False),
        )
        .order_by(Event.seq)
        .limit(limit)
    )
    return [WriteEvent(*row) for row in session.execute(query)]


@dataclass(frozen=True)
class ServedEvent:
    branch: str
    seq: int
    decision: str


def events_serving(tape_id: int, exchange_id: int, *, session: Session) -> list[ServedEvent]:
    """Every ask that was answered with this exchange: who shared one recording."""
    query = (
        select(Branch.path, Event.seq, Event.decision)
        .join(Branch, Branch.id == Event.branch_id)
        .where(Branch.tape_id == tape_id, Event.exchange_id == exchange_id)
        .order_by(Branch.path, Event.seq)
        .limit(500)
    )
    return [ServedEvent(*row) for row in session.execute(query)]
