"""Exchanges, bodies and events: what the world answered and what each branch was served.

Bodies are stored once per content hash; an exchange is written first-wins at its address, so
two askers that both fetched the same address keep one recording and nothing already recorded is
overwritten. Without this module the hot path and the inspection routes would each grow their
own queries over these tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.dml import ReturningInsert

from store.counters import take_event_seq
from store.models import Blob, Branch, Event, Exchange
from store.prepared import Executor, Prepared, dialect_of
from store.unit import Unit
from store.upsert import insert_for_dialect

# Core statements on the tables (not the mapped classes): no ORM compile step per execution.
_exchanges, _blobs, _events = Exchange.__table__, Blob.__table__, Event.__table__


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_PUT_BLOB = Prepared(
    lambda dialect: (
        insert_for_dialect(dialect, _blobs)
        .values(sha256=bindparam("sha256"), data=bindparam("data"))
        .on_conflict_do_nothing(index_elements=["sha256"])
    )
)


def put_blob(data: bytes, *, session: Executor) -> str:
    digest = sha256_hex(data)
    _PUT_BLOB.rows({"sha256": digest, "data": data}, session=session)
    return digest


def put_blob_later(data: bytes, *, unit: Unit) -> str:
    """`put_blob` with the unit's commit (PostgreSQL: in its round trip); its digest now.

    Nothing references a blob by a foreign key, so a row naming it may be written first."""
    digest = sha256_hex(data)
    unit.write_later(_PUT_BLOB, {"sha256": digest, "data": data})
    return digest


def get_blob(sha: str | None, *, session: Session) -> bytes:
    if not sha:
        return b""
    data = session.scalar(select(Blob.data).where(Blob.sha256 == sha))
    if data is None:
        raise LookupError(f"blob {sha} is missing from the store")
    return bytes(data)


def find_exchange(
    tape_id: int, key_hash: str, occurrence: int, fingerprint: str, *, session: Session
) -> Exchange | None:
    query = select(Exchange).where(
        Exchange.tape_id == tape_id,
        Exchange.key_hash == key_hash,
        Exchange.occurrence == occurrence,
        Exchange.fingerprint == fingerprint,
    )
    return session.scalars(query).one_or_none()


class RecordedAnswer(NamedTuple):
    """An exchange's answer with its body, read in one statement for the resolve path."""

    exchange_id: int
    status: int | None
    headers: list[list[str]]
    body_sha: str | None
    body: bytes | None  # None when the exchange has no body, or its blob is missing
    error_kind: str | None

    @property
    def servable_as_read(self) -> bool:
        """Whether this is all a served answer needs: no error to describe, its body here."""
        return self.error_kind is None and (self.body_sha is None or self.body is not None)


def answer_columns(body: ColumnElement[Any]) -> tuple[ColumnElement[Any], ...]:
    """A `RecordedAnswer`'s columns, in its order, with `body` for its blob's data (a caller
    may cap it); from the exchanges table outer-joined to the blobs."""
    return (
        _exchanges.c.id,
        _exchanges.c.response_status,
        _exchanges.c.response_headers,
        _exchanges.c.response_body_sha,
        body,
        _exchanges.c.error_kind,
    )


def answer_from_row(row: Sequence[Any]) -> RecordedAnswer:
    """A `RecordedAnswer` from `answer_columns`' values."""
    exchange_id, status, headers, body_sha, body, error_kind = row
    return RecordedAnswer(
        exchange_id,
        status,
        headers or [],
        body_sha,
        None if body is None else bytes(body),
        error_kind,
    )


_FIND_ANSWER = Prepared(
    lambda _dialect: (
        select(*answer_columns(_blobs.c.data))
        .outerjoin(_blobs, _blobs.c.sha256 == _exchanges.c.response_body_sha)
        .where(
            _exchanges.c.tape_id == bindparam("tape_id"),
            _exchanges.c.key_hash == bindparam("key_hash"),
            _exchanges.c.occurrence == bindparam("occurrence"),
            _exchanges.c.fingerprint == bindparam("fingerprint"),
        )
    )
)


def find_answer(
    tape_id: int, key_hash: str, occurrence: int, fingerprint: str, *, session: Executor
) -> RecordedAnswer | None:
    """The answer recorded at this address with its body, or None."""
    parameters = {
        "tape_id": tape_id,
        "key_hash": key_hash,
        "occurrence": occurrence,
        "fingerprint": fingerprint,
    }
    row = _FIND_ANSWER.first(parameters, session=session)
    return None if row is None else answer_from_row(row)


def get_exchange(tape_id: int, exchange_id: int, *, session: Session) -> Exchange | None:
    exchange = session.get(Exchange, exchange_id)
    if exchange is None or exchange.tape_id != tape_id:
        return None
    return exchange


@dataclass(frozen=True)
class ExchangeContent:
    """Everything an exchange holds except its address."""

    key_readable: str
    request_method: str
    request_host: str
    request_url: str
    request_headers: list[list[str]]
    request_body_sha: str
    response_status: int | None = None
    response_headers: list[list[str]] | None = None
    response_body_sha: str | None = None
    error_kind: str | None = None
    error_message: str | None = None


_EXCHANGE_FIELDS = tuple(column.name for column in _exchanges.columns if column.name != "id")
_INSERT_EXCHANGE = Prepared(
    lambda dialect: (
        insert_for_dialect(dialect, _exchanges)
        .values({name: bindparam(name) for name in _EXCHANGE_FIELDS})
        .on_conflict_do_nothing(index_elements=["tape_id", "key_hash", "occurrence", "fingerprint"])
        .returning(_exchanges.c.id)
    )
)


def insert_new_exchange(
    tape_id: int,
    key_hash: str,
    occurrence: int,
    fingerprint: str,
    content: ExchangeContent,
    *,
    session: Executor,
) -> int | None:
    """The new exchange's id, or None if the address already holds one (first recording wins).

    The hot record path needs only the id of what it inserted: building a detached ORM
    `Exchange` from the same values cost about a sixth of a record's store work.
    """
    values: dict[str, Any] = {
        "tape_id": tape_id,
        "key_hash": key_hash,
        "occurrence": occurrence,
        "fingerprint": fingerprint,
        **content.__dict__,
    }
    row = _INSERT_EXCHANGE.first(values, session=session)
    return None if row is None else int(row[0])


def find_winner(
    tape_id: int, key_hash: str, occurrence: int, fingerprint: str, *, session: Executor
) -> Exchange:
    """The exchange another recording put at the address first (an insert found it taken)."""
    if isinstance(session, Connection):
        # A lost race is rare: an ORM Session joins the connection's transaction to read it.
        with Session(bind=session) as reader:
            exchange = find_exchange(tape_id, key_hash, occurrence, fingerprint, session=reader)
    else:
        exchange = find_exchange(tape_id, key_hash, occurrence, fingerprint, session=session)
    if exchange is None:
        raise LookupError("exchange vanished between insert and select")
    return exchange


_EVENT_FIELDS = (
    "branch_id", "seq", "method", "url", "key_hash", "occurrence", "fingerprint", "decision",
    "is_read", "true_fingerprint_nonempty", "exchange_id",
)  # fmt: skip
_ADD_EVENT = Prepared(
    lambda _dialect: (
        insert(Event.__table__)
        .values({name: bindparam(name) for name in _EVENT_FIELDS})
        .returning(Event.__table__.c.id)
    )
)


def next_event_statement(dialect: str) -> ReturningInsert[tuple[int]]:
    """PostgreSQL: the branch's counter and the event in one statement, one round trip.

    (SQLite has no data-modifying WITH, and being in-process needs no saving of round trips.)
    """
    branches, events = Branch.__table__, Event.__table__
    seq = (
        update(branches)
        .where(branches.c.id == bindparam("branch_id", type_=branches.c.id.type))
        .values(event_count=branches.c.event_count + 1)
        .returning(branches.c.event_count)
        .cte("next_seq")
    )
    values = select(
        *(
            seq.c.event_count if name == "seq" else bindparam(name, type_=events.c[name].type)
            for name in _EVENT_FIELDS
        )
    )
    return (
        insert(events).from_select(list(_EVENT_FIELDS), values).returning(events.c.id).add_cte(seq)
    )


_ADD_NEXT_EVENT = Prepared(next_event_statement)


def add_next_event(*, session: Executor, **fields: Any) -> int:
    """Take the branch's next event number and insert the event at it; its id (a write)."""
    if dialect_of(session).name != "postgresql":
        seq = take_event_seq(fields["branch_id"], session=session)
        return add_event(session=session, seq=seq, **fields)
    row = _ADD_NEXT_EVENT.first(checked_next_event(fields), session=session)
    if row is None:
        raise LookupError(f"branch {fields['branch_id']} does not exist")
    return int(row[0])


def add_next_event_later(unit: Unit, **fields: Any) -> None:
    """`add_next_event` when nobody reads the event's id: on PostgreSQL it waits for the unit's
    commit and shares its round trip (`Unit.write_later`); on SQLite it runs now.

    Deferred, a branch deleted meanwhile (with its tape) takes no event rather than raising."""
    if dialect_of(unit.connection).name != "postgresql":
        add_next_event(session=unit.connection, **fields)
        return
    unit.write_later(_ADD_NEXT_EVENT, checked_next_event(fields))


def checked_next_event(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` if they are every field of an event but its seq (the statement takes that)."""
    missing = set(_EVENT_FIELDS) - {"seq"} - fields.keys()
    if missing:
        raise TypeError(f"add_next_event is missing {sorted(missing)}")
    return fields


def add_event(*, session: Executor, **fields: Any) -> int:
    """Insert an event and return its id (every resolve does this): a write."""
    missing = set(_EVENT_FIELDS) - fields.keys()
    if missing:
        raise TypeError(f"add_event is missing {sorted(missing)}")
    row = _ADD_EVENT.first(fields, session=session)
    assert row is not None
    return int(row[0])


_FINISH_EVENT = Prepared(
    lambda _dialect: (
        update(_events)
        .where(_events.c.id == bindparam("event_id"))
        .values(decision=bindparam("decision"), exchange_id=bindparam("exchange_id"))
    )
)


def finish_event(
    event_id: int, *, decision: str, exchange_id: int | None, session: Executor
) -> None:
    parameters = {"event_id": event_id, "decision": decision, "exchange_id": exchange_id}
    _FINISH_EVENT.rows(parameters, session=session)


def finish_event_later(
    event_id: int, *, decision: str, exchange_id: int | None, unit: Unit
) -> None:
    """`finish_event` with the unit's commit (PostgreSQL: in its round trip)."""
    parameters = {"event_id": event_id, "decision": decision, "exchange_id": exchange_id}
    unit.write_later(_FINISH_EVENT, parameters)
