"""Branch leases: which sidecar proxy answers a branch's hits itself, fenced by epoch.

A proxy holding a branch's lease keeps the branch's occurrence counters in memory, serves its
recorded reads without asking the resolver and ships their events behind (proxy/held_branches.py).
That is only sound while nobody else moves the branch on, so the lease is one row per branch:
a grant to a new holder raises `epoch`; events are applied only for the holder and epoch that
served them (a stale holder's are refused); anyone else who needs the branch's state asks the
holder to flush and release (`revoke`), or waits for the lease to expire. Without this module
two proxies could each serve the same occurrence of one branch, and a fork could copy counters
that miss the hits a sidecar had not shipped yet. Functions take `session=` and never commit.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Insert,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from store import batch_rows, counters
from store.exchanges import RecordedAnswer, answer_columns, answer_from_row
from store.models import (
    Blob,
    Branch,
    BranchLease,
    Event,
    Exchange,
    OccurrenceCounter,
    PendingRecord,
    ResourceVersion,
    Tape,
)
from store.prepared import Executor, Prepared
from store.upsert import insert_for


@dataclass(frozen=True)
class Granted:
    """A lease held: its epoch, wall-time expiry, and the serial of the last event applied at
    the epoch (a holder that takes its own lease again numbers its next hits from there)."""

    epoch: int
    expires: float
    shipped: int = 0


@dataclass(frozen=True)
class Refused:
    """Not granted: another holder's lease runs until `expires` (it was asked to release), or
    (`expires` 0) the branch has a live call in flight that would move its counters."""

    expires: float
    reason: str


def _locked(branch_id: int, session: Session) -> BranchLease:
    """The branch's lease row, created empty if it has none, locked for this transaction."""
    session.execute(
        insert_for(session, BranchLease.__table__)
        .values(branch_id=branch_id, holder=None, epoch=0, expires=0.0, revoke=False, shipped=0)
        .on_conflict_do_nothing(index_elements=["branch_id"])
    )
    query = select(BranchLease).where(BranchLease.branch_id == branch_id).with_for_update()
    return session.execute(query).scalar_one()


def grant(
    branch_id: int, holder: str, *, now: float, lease_seconds: float, session: Session
) -> Granted | Refused:
    """Grant (or extend) `holder`'s lease on the branch.

    Refused while another holder's lease runs (that holder is asked to release) or while a live
    call of the branch is pending: its record will move the branch's counters, which the new
    holder would not see."""
    lease = _locked(branch_id, session)
    if lease.holder not in (None, holder) and lease.expires >= now:
        lease.revoke = True
        return Refused(lease.expires, f"the branch is leased to another proxy ({lease.holder})")
    pending = select(PendingRecord.ticket).where(PendingRecord.branch_id == branch_id).limit(1)
    if lease.holder != holder and session.execute(pending).first() is not None:
        return Refused(0.0, "a live call of the branch is in flight; ask the resolver meanwhile")
    if lease.holder != holder:
        lease.epoch += 1
        lease.holder = holder
        lease.shipped = 0
    lease.revoke = False
    lease.expires = now + lease_seconds
    session.flush()
    return Granted(lease.epoch, lease.expires, lease.shipped)


def branch_state(
    branch_id: int, *, max_counts: int, session: Session
) -> tuple[dict[str, int], bool, dict[str, str]]:
    """The branch's occurrence counts by key (at most `max_counts` of them, and whether that is
    all) and its resource versions: what a holder serves from."""
    rows = session.execute(
        select(OccurrenceCounter.key_hash, OccurrenceCounter.count)
        .where(OccurrenceCounter.branch_id == branch_id)
        .limit(max_counts + 1)
    ).all()
    counts = {str(key): int(count) for key, count in rows[:max_counts]}
    versions = session.execute(
        select(ResourceVersion.resource, ResourceVersion.version).where(
            ResourceVersion.branch_id == branch_id
        )
    )
    return counts, len(rows) <= max_counts, {r: str(v) for r, v in versions}


def answers_ahead(
    tape_id: int,
    branch_id: int,
    *,
    limit: int,
    body_bytes: int,
    held: Sequence[int] = (),
    session: Session,
) -> list[tuple[str, int, str, RecordedAnswer]]:
    """Recorded answers the branch may ask next: the tape's exchanges of each key at or past
    the branch's count of it (from any sibling or any sidecar), newest first, small bodies only,
    no failures, none of the exchanges in `held` (the holder keeps them already); (key,
    occurrence, fingerprint, answer) each. A new holder keeps them so its first ask of an
    address a sibling recorded elsewhere is answered locally too."""
    exchanges_table, blobs = Exchange.__table__, Blob.__table__
    counted = (
        select(OccurrenceCounter.count)
        .where(
            OccurrenceCounter.branch_id == branch_id,
            OccurrenceCounter.key_hash == exchanges_table.c.key_hash,
        )
        .scalar_subquery()
    )
    small = or_(blobs.c.data.is_(None), func.length(blobs.c.data) <= body_bytes)
    query = (
        select(
            exchanges_table.c.key_hash,
            exchanges_table.c.occurrence,
            exchanges_table.c.fingerprint,
            *answer_columns(blobs.c.data),
        )
        .outerjoin(blobs, blobs.c.sha256 == exchanges_table.c.response_body_sha)
        .where(
            exchanges_table.c.tape_id == tape_id,
            exchanges_table.c.error_kind.is_(None),
            exchanges_table.c.occurrence >= func.coalesce(counted, 0),
            small,
            *([exchanges_table.c.id.not_in(sorted(set(held)))] if held else []),
        )
        .order_by(exchanges_table.c.id.desc())
        .limit(limit)
    )
    found = []
    for row in session.execute(query):
        answer = answer_from_row(row[3:])
        if answer.servable_as_read:
            found.append((str(row[0]), int(row[1]), str(row[2]), answer))
    return found


def renew(
    holder: str,
    held: Iterable[tuple[int, int]],
    *,
    now: float,
    lease_seconds: float,
    release_unlisted: bool = False,
    session: Session,
) -> tuple[list[int], list[int], list[int]]:
    """Extend each (branch id, epoch) `holder` still holds; (renewed, revoke asked, lost).

    A lease someone asked back is not extended: the holder flushes and releases it. With
    `release_unlisted` the holder's other leases end (it restarted: their copies are gone).
    Two statements whatever the number of leases (a holder renews all of them every few
    seconds: a statement each would make renewals the resolver's largest cost)."""
    epochs = dict(held)
    if release_unlisted:
        session.execute(
            update(BranchLease)
            .where(BranchLease.holder == holder, BranchLease.branch_id.not_in(list(epochs)))
            .values(holder=None, revoke=False, expires=0.0)
        )
    if not epochs:
        return [], [], []
    rows = session.execute(
        select(BranchLease.branch_id, BranchLease.holder, BranchLease.epoch, BranchLease.revoke)
        .where(BranchLease.branch_id.in_(list(epochs)))
        .with_for_update()
    ).all()
    state = {row.branch_id: row for row in rows}
    renewed: list[int] = []
    revoked: list[int] = []
    lost: list[int] = []
    for branch_id, epoch in epochs.items():
        lease = state.get(branch_id)
        if lease is None or lease.holder != holder or lease.epoch != epoch:
            lost.append(branch_id)
        elif lease.revoke:
            revoked.append(branch_id)
        else:
            renewed.append(branch_id)
    if renewed:
        session.execute(
            update(BranchLease)
            .where(BranchLease.branch_id.in_(renewed))
            .values(expires=now + lease_seconds)
        )
    return renewed, revoked, lost


def release(branch_id: int, holder: str, epoch: int, *, session: Session) -> bool:
    """End `holder`'s lease (its events shipped first); False if it no longer held it."""
    result = session.execute(
        update(BranchLease)
        .where(
            BranchLease.branch_id == branch_id,
            BranchLease.holder == holder,
            BranchLease.epoch == epoch,
        )
        .values(holder=None, revoke=False, expires=0.0)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def void_expired(branch_id: int, holder: str, *, session: Session) -> None:
    """Another asker moves the branch on after `holder`'s lease expired: its events are
    refused from now on (a re-grant raises the epoch)."""
    session.execute(
        update(BranchLease)
        .where(BranchLease.branch_id == branch_id, BranchLease.holder == holder)
        .values(holder=None, revoke=False, expires=0.0)
    )


def _held(grace: Any, now: Any) -> ColumnElement[bool]:
    """A lease still held at `now`: it has a holder, and lapsed less than `grace` ago if at all
    (`grace` and `now` as values, or as a prepared statement's bind parameters)."""
    return and_(BranchLease.holder.is_not(None), BranchLease.expires + grace >= now)


def ask_back(branch_ids: Sequence[int], *, now: float, grace: float, session: Session) -> float:
    """Ask the holders of these branches' leases to flush and release; when to stop waiting
    for them (0.0 when none is held). A lease that lapsed less than `grace` ago is asked too:
    its holder may only have lost the store for a while (its renewals failed), and still hold
    hits it served; a restarted one ships them."""
    if not branch_ids:
        return 0.0
    held = session.execute(
        update(BranchLease)
        .where(
            BranchLease.branch_id.in_(branch_ids),
            _held(grace, now),
        )
        .values(revoke=True)
        .returning(BranchLease.expires)
    )
    return max((float(expires) + grace for (expires,) in held), default=0.0)


def any_held(branch_ids: Sequence[int], *, now: float, grace: float, session: Session) -> bool:
    """Whether any of these branches is still leased, or lapsed less than `grace` ago."""
    if not branch_ids:
        return False
    query = (
        select(BranchLease.branch_id)
        .where(
            BranchLease.branch_id.in_(branch_ids),
            _held(grace, now),
        )
        .limit(1)
    )
    return session.execute(query).first() is not None


def _held_on_tape_statement(*, one_branch: bool) -> Prepared:
    def build(_dialect: str) -> Any:
        leases, branches, tapes = BranchLease.__table__, Branch.__table__, Tape.__table__
        query = (
            select(leases.c.branch_id)
            .join(branches, branches.c.id == leases.c.branch_id)
            .join(tapes, tapes.c.id == branches.c.tape_id)
            .where(
                tapes.c.name == bindparam("tape"),
                _held(bindparam("grace", type_=Float), bindparam("now", type_=Float)),
            )
            .limit(1)
        )
        return query.where(branches.c.path == bindparam("branch")) if one_branch else query

    return Prepared(build)


_HELD_ON_TAPE = _held_on_tape_statement(one_branch=False)
_HELD_ON_BRANCH = _held_on_tape_statement(one_branch=True)


def any_held_on_tape(
    tape: str, branch: str | None, *, now: float, grace: float, session: Executor
) -> bool:
    """`any_held` for the tape named `tape` (or its branch at `branch`) in one prepared
    statement: what every report and fork asks first, and on a tape with no lease the only
    thing (listing the branch ids first was two ORM statements per report and fork)."""
    parameters: dict[str, Any] = {"tape": tape, "now": now, "grace": grace}
    if branch is None:
        return _HELD_ON_TAPE.first(parameters, session=session) is not None
    parameters["branch"] = branch
    return _HELD_ON_BRANCH.first(parameters, session=session) is not None


def void_lapsed(branch_ids: Sequence[int], *, before: float, session: Session) -> None:
    """End the leases of these branches that lapsed before `before`: their holders are gone,
    and what they ship late is refused."""
    if branch_ids:
        session.execute(
            update(BranchLease)
            .where(BranchLease.branch_id.in_(branch_ids), BranchLease.expires < before)
            .values(holder=None, revoke=False)
        )


# What a shipped event carries beside an event's columns.
_NOT_EVENT_FIELDS = frozenset({"attempt", "serial"})


def apply_events(
    branch_id: int,
    holder: str,
    epoch: int,
    events: Sequence[dict[str, Any]],
    *,
    session: Session,
) -> bool:
    """The events a holder served, written as a resolve writes a hit's: each its event (numbered
    in the order served) and its occurrence (advanced, never back), in three statements for the
    whole batch. Each event carries its `serial` at this epoch (1, 2, …); those already applied
    are skipped, so a batch shipped again (its answer was lost) counts once. False, and nothing
    written, if `holder` no longer holds the lease at `epoch` (an expired lease nobody took is
    still its own)."""
    lease = session.get(BranchLease, branch_id, with_for_update=True)
    if lease is None or lease.holder != holder or lease.epoch != epoch:
        return False
    events = [event for event in events if event["serial"] > lease.shipped]
    if not events:
        return True
    lease.shipped = max(event["serial"] for event in events)
    numbered = session.execute(
        update(Branch)
        .where(Branch.id == branch_id)
        .values(event_count=Branch.event_count + len(events))
        .returning(Branch.event_count)
    ).scalar_one()
    first = numbered - len(events) + 1
    answered: dict[str, tuple[int, str | None]] = {}
    rows = []
    for index, event in enumerate(events):
        fields = {name: value for name, value in event.items() if name not in _NOT_EVENT_FIELDS}
        rows.append({**fields, "branch_id": branch_id, "seq": first + index})
        key, occurrence = event["key_hash"], event["occurrence"]
        if key not in answered or occurrence >= answered[key][0]:
            answered[key] = (occurrence, event.get("attempt"))
    columns = tuple(rows[0])
    statement = _events_batch(session.get_bind().dialect.name, columns)
    session.execute(statement, batch_rows.rows_parameter(rows, columns))
    counters.advance_occurrences(branch_id, answered, session=session)
    return True


@functools.cache
def _events_batch(dialect: str, columns: tuple[str, ...]) -> Insert:
    """A batch's event rows in one statement (`store/batch_rows.py`)."""
    table = Event.__table__
    return insert(table).from_select(columns, batch_rows.batch_select(dialect, table, columns))
