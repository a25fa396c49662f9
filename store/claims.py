"""Single-flight claims and pending records, shared by every resolver replica through the store.

Concurrent misses on one address must make exactly one upstream call, across processes. The
first asker inserts a claim row (unique per address) lasting a while; others see it and wait. A
holder that died leaves an expired claim which a waiter may take over. A holder whose live call
failed before the world answered leaves its claim failed (`fail_claim_later`): the waiters of
that attempt are served the failure, and the next fresh ask takes the row over like an expired
one. Pending records hold what a ticket needs at `/v1/record` time. Neither is tape content:
both may use wall time.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, Result, bindparam, delete, insert, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.dml import ReturningDelete

from store import exchanges
from store.models import Claim, PendingRecord, Tape
from store.prepared import Executor, Prepared, dialect_of
from store.unit import Unit
from store.upsert import insert_for_dialect

# Every forward and every record runs these: Core statements compiled once (see store.prepared).
_claims, _pending, _tapes = Claim.__table__, PendingRecord.__table__, Tape.__table__
_PENDING_FIELDS = tuple(column.name for column in _pending.columns)


def _try_claim_statement(dialect: str) -> ClauseElement:
    columns = ("tape_id", "key_hash", "occurrence", "fingerprint", "ticket", "claim_expires")
    return (
        insert_for_dialect(dialect, _claims)
        .values({name: bindparam(name) for name in columns})
        .on_conflict_do_nothing(index_elements=["tape_id", "key_hash", "occurrence", "fingerprint"])
        .returning(_claims.c.id)
    )


_TRY_CLAIM = Prepared(_try_claim_statement)
_TAPE_ONLINE_LOCKED = Prepared(
    lambda _dialect: (
        select(_tapes.c.online)
        .where(_tapes.c.id == bindparam("tape_id"))
        .with_for_update(read=True)
    )
)
_RELEASE_CLAIM = Prepared(
    lambda _dialect: delete(_claims).where(_claims.c.ticket == bindparam("ticket"))
)
# A failed attempt's claim is lapsed at once (0.0 is before any `now`): a fresh ask takes the
# row over as it would an expired one, without waiting.
_FAIL_CLAIM = Prepared(
    lambda _dialect: (
        update(_claims)
        .where(_claims.c.ticket == bindparam("ticket"))
        .values(failure=bindparam("failure"), claim_expires=0.0)
    )
)
_ADD_PENDING = Prepared(
    lambda _dialect: insert(_pending).values({name: bindparam(name) for name in _PENDING_FIELDS})
)
# What a record needs of the pending row (not `created`: only the stale sweep reads it).
_POPPED_FIELDS = tuple(name for name in _PENDING_FIELDS if name != "created")
_POPPED_COLUMNS = tuple(_pending.c[name] for name in _POPPED_FIELDS)


# One statement takes the ticket's row: a concurrent second record of the ticket (PostgreSQL
# waits on the row lock) finds nothing, so a ticket still records at most once.
def pop_pending_statement() -> ReturningDelete[*tuple[Any, ...]]:
    """Delete the pending record of bind parameter `ticket`, returning `Pending`'s fields."""
    return (
        delete(_pending).where(_pending.c.ticket == bindparam("ticket")).returning(*_POPPED_COLUMNS)
    )


_POP_PENDING = Prepared(lambda _dialect: pop_pending_statement())


def new_ticket() -> str:
    return secrets.token_hex(16)


def try_claim(
    tape_id: int,
    key_hash: str,
    occurrence: int,
    fingerprint: str,
    *,
    ticket: str,
    claim_expires: float,
    session: Executor,
) -> bool:
    """Claim the address for `ticket`; False when someone else holds it."""
    parameters = {
        "tape_id": tape_id,
        "key_hash": key_hash,
        "occurrence": occurrence,
        "fingerprint": fingerprint,
        "ticket": ticket,
        "claim_expires": claim_expires,
    }
    return _TRY_CLAIM.first(parameters, session=session) is not None


@dataclass(frozen=True)
class HeldClaim:
    """A claim row as the decision path reads it: who holds the address, and until when."""

    id: int
    ticket: str
    claim_expires: float
    # The holder's live call failed before the world answered: {"kind", "message"} as JSON.
    failure: str | None = None


_GET_CLAIM = Prepared(
    lambda _dialect: select(
        _claims.c.id, _claims.c.ticket, _claims.c.claim_expires, _claims.c.failure
    ).where(
        _claims.c.tape_id == bindparam("tape_id"),
        _claims.c.key_hash == bindparam("key_hash"),
        _claims.c.occurrence == bindparam("occurrence"),
        _claims.c.fingerprint == bindparam("fingerprint"),
    )
)


def get_claim(
    tape_id: int, key_hash: str, occurrence: int, fingerprint: str, *, session: Executor
) -> HeldClaim | None:
    """The claim on the address, if any (a resolve that lost the claim race, every poll)."""
    parameters = {
        "tape_id": tape_id,
        "key_hash": key_hash,
        "occurrence": occurrence,
        "fingerprint": fingerprint,
    }
    row = _GET_CLAIM.first(parameters, session=session)
    if row is None:
        return None
    return HeldClaim(int(row[0]), str(row[1]), float(row[2]), row[3])


def take_over_expired(
    claim_id: int,
    *,
    old_ticket: str,
    ticket: str,
    now: float,
    claim_expires: float,
    session: Session,
) -> bool:
    """Move an expired (or failed) claim to `ticket`; only one asker can win the conditional
    update. A failed attempt's failure goes with it: the new attempt has not failed."""
    statement = (
        update(Claim)
        .where(Claim.id == claim_id, Claim.ticket == old_ticket, Claim.claim_expires < now)
        .values(ticket=ticket, claim_expires=claim_expires, failure=None)
    )
    return _rows_matched(session.execute(statement)) == 1


def renew_claim(ticket: str, *, claim_expires: float, session: Session) -> bool:
    """Extend the claim `ticket` holds; False when it holds no claim any more."""
    # A failed claim stays lapsed: a renewal racing its holder's failed record must not revive it.
    statement = (
        update(Claim)
        .where(Claim.ticket == ticket, Claim.failure.is_(None))
        .values(claim_expires=claim_expires)
    )
    return _rows_matched(session.execute(statement)) == 1


def tape_online_locked(tape_id: int, *, session: Executor) -> bool | None:
    """The tape's online flag, read under a share lock (None: the tape is gone).

    A claim or takeover checks this in its own transaction: on PostgreSQL a concurrent seal's
    update waits for it (or it sees the committed seal), so once a seal commits no new forward
    is handed out. SQLite serialises writers anyway (`BEGIN IMMEDIATE`).
    """
    row = _TAPE_ONLINE_LOCKED.first({"tape_id": tape_id}, session=session)
    return None if row is None else bool(row[0])


def release_claim(ticket: str, *, session: Executor) -> None:
    _RELEASE_CLAIM.rows({"ticket": ticket}, session=session)


def release_claim_later(ticket: str, *, unit: Unit) -> None:
    """`release_claim` with the unit's commit (PostgreSQL: in its round trip)."""
    unit.write_later(_RELEASE_CLAIM, {"ticket": ticket})


def fail_claim_later(ticket: str, *, kind: str, message: str, unit: Unit) -> None:
    """The claim `ticket` holds (if it still does) stays, failed: its live call failed before
    the world answered. With the unit's commit (PostgreSQL: in its round trip)."""
    failure = json.dumps({"kind": kind, "message": message}, sort_keys=True)
    unit.write_later(_FAIL_CLAIM, {"ticket": ticket, "failure": failure})


def add_pending(*, session: Executor, **fields: Any) -> None:
    """Store what `ticket` needs at record time (every field of the row is given)."""
    _ADD_PENDING.rows(_checked_pending(fields), session=session)


def add_pending_later(*, unit: Unit, **fields: Any) -> None:
    """`add_pending` with the unit's commit (PostgreSQL: in its round trip)."""
    unit.write_later(_ADD_PENDING, _checked_pending(fields))


def _pending_with_event_statement(dialect: str) -> ClauseElement:
    """PostgreSQL: the branch's next event and the pending record that names it, in one
    statement: the event's id goes from one insert to the other inside the server. The
    record's fields are bound as `pending_<field>`, the event's under their own names."""
    event = exchanges.next_event_statement(dialect).cte("event")
    values = select(
        *(
            event.c.id
            if name == "event_id"
            else bindparam(f"pending_{name}", type_=_pending.c[name].type)
            for name in _PENDING_FIELDS
        )
    )
    return insert(_pending).from_select(list(_PENDING_FIELDS), values)


_ADD_PENDING_WITH_EVENT = Prepared(_pending_with_event_statement)


def add_pending_with_event_later(*, unit: Unit, event: dict[str, Any], **fields: Any) -> None:
    """The branch's next event (`event`: its fields but the seq) and the pending record that
    names it (`fields`: every field of the row but `event_id`). Nothing reads the event's id
    back, so on PostgreSQL both are one statement with the unit's commit, in its round trip (a
    branch deleted meanwhile, with its tape, takes neither: the ticket then records nothing);
    SQLite writes the event now and the record as `add_pending_later` does."""
    if dialect_of(unit.connection).name != "postgresql":
        event_id = exchanges.add_next_event(session=unit.connection, **event)
        add_pending_later(unit=unit, event_id=event_id, **fields)
        return
    pending = _checked_pending({**fields, "event_id": None})
    parameters = {f"pending_{name}": value for name, value in pending.items() if name != "event_id"}
    unit.write_later(_ADD_PENDING_WITH_EVENT, {**exchanges.checked_next_event(event), **parameters})


def _checked_pending(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` if they are every field of a pending record's row."""
    missing = set(_PENDING_FIELDS) - fields.keys()
    if missing:
        raise TypeError(f"add_pending is missing {sorted(missing)}")
    return fields


@dataclass(frozen=True, slots=True)
class Pending:
    """A pending record taken out of the store: what its ticket's record needs.

    A plain value, not a mapped object: the row is already gone and nothing of it is written
    back, and a detached `PendingRecord` pays the ORM's attribute instrumentation on every
    field (with the record's new `Exchange`, about a tenth of a record's CPU in cProfile).
    The fields are the row's, in table order (`created` is left out: only the stale sweep
    reads it).
    """

    ticket: str
    tape_id: int
    branch_id: int
    event_id: int
    key_hash: str
    occurrence: int
    fingerprint: str
    decision: str
    is_write: bool
    request: dict[str, Any]


def pop_pending(ticket: str, *, session: Executor) -> Pending | None:
    """The pending record for `ticket`, removed so a ticket records at most once."""
    row = _POP_PENDING.first({"ticket": ticket}, session=session)
    if row is None:
        return None
    return Pending(*row)


def delete_stale_pending(created_before: float, *, session: Session) -> int:
    """Forget forwards whose proxy never reported back (and their claims); returns how many.

    Their tickets then answer 409 like any unknown ticket; the events stay, without an exchange.
    """
    stale = select(PendingRecord.ticket).where(PendingRecord.created < created_before)
    session.execute(delete(Claim).where(Claim.ticket.in_(stale)))
    result = session.execute(delete(PendingRecord).where(PendingRecord.created < created_before))
    return _rows_matched(result)


def _rows_matched(result: Result[*tuple[Any, ...]]) -> int:
    """How many rows an UPDATE or DELETE with a WHERE clause matched.

    `Session.execute` is typed to return a plain `Result`, since some ORM statements (bulk
    writes by primary key) give other results; a statement with a WHERE clause gives a
    `CursorResult`, and SQLAlchemy's advice is to cast it (sqlalchemy/sqlalchemy#12813).
    """
    return int(cast("CursorResult[Any]", result).rowcount or 0)
