"""Single-flight claims and pending records, shared by every resolver replica through the store.

Concurrent misses on one address must make exactly one upstream call, across processes. The
first asker inserts a claim row (unique per address) with a lease; others see it and wait. A
holder that died leaves an expired lease which a waiter may take over. Pending records hold
what a ticket needs at `/v1/record` time. Neither is tape content: both may use wall time.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from store.models import Claim, PendingRecord, Tape
from store.upsert import insert_for


def new_ticket() -> str:
    return secrets.token_hex(16)


def try_claim(
    tape_id: int,
    key_hash: str,
    occurrence: int,
    fingerprint: str,
    *,
    ticket: str,
    lease_expires: float,
    session: Session,
) -> bool:
    """Claim the address for `ticket`; False when someone else holds it."""
    statement = insert_for(session, Claim.__table__).values(
        tape_id=tape_id,
        key_hash=key_hash,
        occurrence=occurrence,
        fingerprint=fingerprint,
        ticket=ticket,
        lease_expires=lease_expires,
    )
    statement = statement.on_conflict_do_nothing(
        index_elements=["tape_id", "key_hash", "occurrence", "fingerprint"]
    ).returning(Claim.__table__.c.id)
    return session.execute(statement).scalar_one_or_none() is not None


def get_claim(
    tape_id: int, key_hash: str, occurrence: int, fingerprint: str, *, session: Session
) -> Claim | None:
    query = select(Claim).where(
        Claim.tape_id == tape_id,
        Claim.key_hash == key_hash,
        Claim.occurrence == occurrence,
        Claim.fingerprint == fingerprint,
    )
    return session.scalars(query).one_or_none()


def take_over_expired(
    claim_id: int,
    *,
    old_ticket: str,
    ticket: str,
    now: float,
    lease_expires: float,
    session: Session,
) -> bool:
    """Move an expired claim to `ticket`; only one waiter can win the conditional update."""
    statement = (
        update(Claim)
        .where(Claim.id == claim_id, Claim.ticket == old_ticket, Claim.lease_expires < now)
        .values(ticket=ticket, lease_expires=lease_expires)
    )
    return session.execute(statement).rowcount == 1


def renew_claim(ticket: str, *, lease_expires: float, session: Session) -> bool:
    """Extend the lease `ticket` holds; False when it holds no claim any more."""
    statement = update(Claim).where(Claim.ticket == ticket).values(lease_expires=lease_expires)
    return session.execute(statement).rowcount == 1


def tape_online_locked(tape_id: int, *, session: Session) -> bool | None:
    """The tape's online flag, read under a share lock (None: the tape is gone).

    A claim or takeover checks this in its own transaction: on PostgreSQL a concurrent seal's
    update waits for it (or it sees the committed seal), so once a seal commits no new forward
    is handed out. SQLite serialises writers anyway (`BEGIN IMMEDIATE`).
    """
    query = select(Tape.online).where(Tape.id == tape_id).with_for_update(read=True)
    return session.execute(query).scalar_one_or_none()


def release_claim(ticket: str, *, session: Session) -> None:
    session.execute(delete(Claim).where(Claim.ticket == ticket))


def add_pending(*, session: Session, **fields: Any) -> PendingRecord:
    pending = PendingRecord(**fields)
    session.add(pending)
    session.flush()
    return pending


def pop_pending(ticket: str, *, session: Session) -> PendingRecord | None:
    """The pending record for `ticket`, removed so a ticket records at most once."""
    pending = session.get(PendingRecord, ticket, with_for_update=True)
    if pending is None:
        return None
    session.delete(pending)
    session.flush()
    return pending


def delete_stale_pending(created_before: float, *, session: Session) -> int:
    """Forget forwards whose proxy never reported back (and their claims); returns how many.

    Their tickets then answer 409 like any unknown ticket; the events stay, without an exchange.
    """
    stale = select(PendingRecord.ticket).where(PendingRecord.created < created_before)
    session.execute(delete(Claim).where(Claim.ticket.in_(stale)))
    result = session.execute(delete(PendingRecord).where(PendingRecord.created < created_before))
    return int(result.rowcount or 0)
