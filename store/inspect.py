"""Read-side queries over a tape for people: event pages and per-branch decision tallies.

The report, the events listing and `tape diff` must not load a whole tape into memory; these
queries page and aggregate in the database, and a diff reads only the segments of two lineages
that differ (`Segment`). Interpreting the tallies (what counts as a lie, a live call) is
the resolver's business, not the store's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, Select, and_, exists, func, or_, select
from sqlalchemy.orm import Session

from store.models import Branch, Event, Exchange, PendingRecord, ResourceVersion


@dataclass(frozen=True)
class EventRow:
    id: int
    seq: int
    branch: str
    method: str
    url: str
    key_hash: str
    occurrence: int
    fingerprint: str
    decision: str
    exchange_id: int | None
    status: int | None
    is_read: bool = True


@dataclass(frozen=True)
class Tally:
    branch: str
    decision: str
    is_read: bool
    errored: bool
    count: int
    # No exchange, and no pending record either (a write: pending or not): the live call's answer
    # never reached the tape.
    unfinished: bool = False


# The columns of an EventRow, in order, except its status.
_EVENT_COLUMNS = (
    Event.id,
    Event.seq,
    Branch.path,
    Event.method,
    Event.url,
    Event.key_hash,
    Event.occurrence,
    Event.fingerprint,
    Event.decision,
    Event.exchange_id,
    Event.is_read,
)


def events_page(
    tape_id: int, *, branch: str | None, after: int, limit: int, session: Session
) -> list[EventRow]:
    """Events after a cursor: the branch's `seq` with a branch, else the global event id."""
    query = _served_events(tape_id)
    if branch is not None:
        query = query.where(Branch.path == branch, Event.seq > after).order_by(Event.seq)
    else:
        query = query.where(Event.id > after).order_by(Event.id)
    return [_served_row(row) for row in session.execute(query.limit(limit))]


def _served_events(tape_id: int) -> Select[*tuple[Any, ...]]:
    """A tape's events with the status each was answered (a recorded upstream error: 502)."""
    return (
        select(*_EVENT_COLUMNS, Exchange.response_status, Exchange.error_kind)
        .join(Branch, Branch.id == Event.branch_id)
        .join(Exchange, Exchange.id == Event.exchange_id, isouter=True)
        .where(Branch.tape_id == tape_id)
    )


def _served_row(row: Row[*tuple[Any, ...]]) -> EventRow:
    return _event_row(row, 502 if row.error_kind is not None else row.response_status)


@dataclass(frozen=True)
class Segment:
    """Events `after < seq <= upto` of one branch (`upto` None: to its end)."""

    branch: str
    after: int
    upto: int | None


def segment_events(
    tape_id: int, segments: list[Segment], *, limit: int, session: Session
) -> list[EventRow]:
    """The events of `segments` in order, at most `limit` in all."""
    found: list[EventRow] = []
    for segment in segments:
        if len(found) >= limit:
            break
        query = (
            _served_events(tape_id)
            .where(Branch.path == segment.branch, Event.seq > segment.after)
            .order_by(Event.seq)
            .limit(limit - len(found))
        )
        if segment.upto is not None:
            query = query.where(Event.seq <= segment.upto)
        found += [_served_row(row) for row in session.execute(query)]
    return found


def _event_row(row: Row[*tuple[Any, ...]], status: int | None) -> EventRow:
    """The `EventRow` of a row that holds `_EVENT_COLUMNS`, read by their names."""
    return EventRow(
        id=row.id,
        seq=row.seq,
        branch=row.path,
        method=row.method,
        url=row.url,
        key_hash=row.key_hash,
        occurrence=row.occurrence,
        fingerprint=row.fingerprint,
        decision=row.decision,
        exchange_id=row.exchange_id,
        status=status,
        is_read=bool(row.is_read),
    )


def decision_tallies(tape_id: int, *, session: Session) -> list[Tally]:
    errored = Exchange.error_kind.is_not(None)
    unfinished = _never_recorded()
    query = (
        select(Branch.path, Event.decision, Event.is_read, errored, unfinished, func.count())
        .select_from(Event)
        .join(Branch, Branch.id == Event.branch_id)
        .join(Exchange, Exchange.id == Event.exchange_id, isouter=True)
        .where(Branch.tape_id == tape_id)
        .group_by(Branch.path, Event.decision, Event.is_read, errored, unfinished)
    )
    return [
        Tally(path, decision, bool(is_read), bool(err), n, unfinished=bool(gone))
        for path, decision, is_read, err, gone, n in session.execute(query)
    ]


def _never_recorded() -> Any:
    """An event whose live call left no exchange: a read with no pending record either (one
    with a pending record is still being fetched); a write whether pending or not, since the
    world has (or may have) seen it while its record has not landed (write-ahead)."""
    in_flight = exists().where(PendingRecord.event_id == Event.id)
    return and_(Event.exchange_id.is_(None), or_(Event.is_read.is_(False), ~in_flight))


def unknown_versions(tape_id: int, prefix: str, *, session: Session) -> dict[str, dict[str, str]]:
    """Branch path -> the resources whose version starts with `prefix` (a write's intent)."""
    query = (
        select(Branch.path, ResourceVersion.resource, ResourceVersion.version)
        .join(Branch, Branch.id == ResourceVersion.branch_id)
        .where(Branch.tape_id == tape_id, ResourceVersion.version.startswith(prefix))
    )
    found: dict[str, dict[str, str]] = {}
    for path, resource, version in session.execute(query):
        found.setdefault(path, {})[resource] = version
    return found


def unrecorded_events(
    tape_id: int, decisions: list[str], *, limit: int, session: Session
) -> list[EventRow]:
    """Live calls of `decisions` whose answer never reached the tape (`_never_recorded`)."""
    query = (
        select(*_EVENT_COLUMNS)
        .join(Branch, Branch.id == Event.branch_id)
        .where(Branch.tape_id == tape_id, Event.decision.in_(decisions), _never_recorded())
        .order_by(Event.id)
        .limit(limit)
    )
    return [_event_row(row, None) for row in session.execute(query)]
