"""A branch's two atomic counters: how often each key was answered, and its next event number.

An ask's address includes its occurrence (how many times the branch's lineage asked the same
key before), and a branch's events are numbered in the order they happened; both must be taken
atomically by concurrent resolves of one branch, on any resolver replica, or two asks would get
the same address or event number. Each is taken by one write statement that returns the new
value (an upsert for the occurrence, an UPDATE … RETURNING for the event number). Every function
takes `session=` and never commits.

Occurrences are taken by answers, not attempts (DESIGN §4): a resolve takes the occurrence in
its opening statement (a hit is answered in the same transaction), and an ask that leaves the
transaction without an answer (a read handed out to go live, or told to wait) gives it back in
that same transaction (`give_back_occurrence_later`); its answer takes it when it commits
(`advance_occurrence_later`: never backwards, so a record and its waiters agree). An ask that
fails before its answer reaches the worker — a 503, a dead resolver, a failed record — so leaves
the lineage where it stood, and the retry asks the same occurrence as its siblings.

One window is left by that rule: a hit (or a write) answered in its opening transaction that
commits and dies before the answer reaches the proxy. The ask's attempt id closes it: the
counter keeps the attempt that advanced it last (`attempt`), and an ask carrying that same
attempt — the proxy's retry of an ask it got no answer to — is given the occurrence its first
try took, without counting again. Giving an occurrence back forgets the attempt, so a retry of
an ask that left without an answer takes the occurrence afresh, as any ask would.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy import BindParameter, Insert, String, bindparam, case, func, null, true, update
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from store import batch_rows
from store.models import Branch, OccurrenceCounter
from store.prepared import Executor, Prepared
from store.unit import Unit
from store.upsert import insert_for_dialect

_branches = Branch.__table__
_occurrences = OccurrenceCounter.__table__


def attempt_parameter() -> BindParameter[str]:
    """The ask's attempt id (None: an ask that cannot be retried as itself)."""
    return bindparam("attempt", type_=String(64))


def counted_again() -> dict[str, Any]:
    """The upsert's update of an existing counter: one more, unless the ask is the retry of
    the attempt that advanced it last (its first try's occurrence stands); either way the
    counter now names this attempt. SQL's `NULL = NULL` is not true, so an ask without an
    attempt id always counts."""
    counted = _occurrences.c["count"]
    same_attempt = _occurrences.c.attempt == attempt_parameter()
    return {
        "count": case((same_attempt, counted), else_=counted + 1),
        "attempt": attempt_parameter(),
    }


def take_occurrence_statement(dialect: str) -> Insert:
    """The occurrence counter's upsert, returning the new count (`store.fused` embeds it)."""
    statement = insert_for_dialect(dialect, _occurrences).values(
        branch_id=bindparam("branch_id"),
        key_hash=bindparam("key_hash"),
        count=1,
        attempt=attempt_parameter(),
    )
    return statement.on_conflict_do_update(
        index_elements=["branch_id", "key_hash"], set_=counted_again()
    ).returning(_occurrences.c["count"])


_TAKE_OCCURRENCE = Prepared(take_occurrence_statement)


def take_occurrence(
    branch_id: int, key_hash: str, *, attempt: str | None = None, session: Executor
) -> int:
    """This ask's occurrence (asks of the key before it), counting it atomically: a write.

    `attempt`: the ask's attempt id; the retry of the attempt that counted last gets its
    occurrence again (the module's docstring says when that happens)."""
    parameters = {"branch_id": branch_id, "key_hash": key_hash, "attempt": attempt}
    row = _TAKE_OCCURRENCE.first(parameters, session=session)
    assert row is not None
    return int(row[0]) - 1


_GIVE_BACK_OCCURRENCE = Prepared(
    lambda _dialect: (
        update(_occurrences)
        .where(
            _occurrences.c.branch_id == bindparam("branch_id"),
            _occurrences.c.key_hash == bindparam("key_hash"),
        )
        .values(count=_occurrences.c["count"] - 1, attempt=null())
    )
)


def give_back_occurrence_later(branch_id: int, key_hash: str, *, unit: Unit) -> None:
    """Undo this transaction's `take_occurrence` (its row is locked since): the ask leaves
    without an answer, so its attempt is forgotten too (a retry of it counts afresh). With the
    unit's commit (PostgreSQL: in its round trip)."""
    unit.write_later(_GIVE_BACK_OCCURRENCE, {"branch_id": branch_id, "key_hash": key_hash})


def _advance_statement(dialect: str, *, batch: bool = False) -> Insert:
    """The counter upsert of one answer, or (`batch`) of each of the rows
    `batch_rows.rows_parameter` holds."""
    statement = insert_for_dialect(dialect, _occurrences)
    if batch:
        branch: dict[str, ColumnElement[Any]] = {"branch_id": bindparam("branch_id")}
        rows = batch_rows.batch_select(dialect, _occurrences, _BATCH_COLUMNS, branch)
        # SQLite reads `INSERT … SELECT … ON CONFLICT` as a join constraint without a WHERE.
        statement = statement.from_select([*_BATCH_COLUMNS, "branch_id"], rows.where(true()))
    else:
        statement = statement.values(
            branch_id=bindparam("branch_id"),
            key_hash=bindparam("key_hash"),
            count=bindparam("count"),
            attempt=attempt_parameter(),
        )
    counted, offered = _occurrences.c["count"], statement.excluded["count"]
    larger = func.greatest if dialect == "postgresql" else func.max
    # Both read the row as it was: the attempt is named only by an answer that moved it on.
    moved_on = counted < offered
    return statement.on_conflict_do_update(
        index_elements=["branch_id", "key_hash"],
        set_={
            "count": larger(counted, offered),
            "attempt": case((moved_on, statement.excluded.attempt), else_=_occurrences.c.attempt),
        },
    )


_ADVANCE_OCCURRENCE = Prepared(_advance_statement)


def _advance_parameters(
    branch_id: int, key_hash: str, occurrence: int, attempt: str | None
) -> dict[str, object]:
    """An answer at `occurrence`: the count it raises the counter to, and whose answer it is."""
    return {
        "branch_id": branch_id,
        "key_hash": key_hash,
        "count": occurrence + 1,
        "attempt": attempt,
    }


def advance_occurrence(
    branch_id: int,
    key_hash: str,
    occurrence: int,
    *,
    attempt: str | None = None,
    session: Executor,
) -> None:
    """An answer at `occurrence` was given: the branch's count of the key is at least one past
    it (never moved back: a record and its waiters may advance it in any order). Moving it on
    names `attempt`, the answered ask's, so its retry (the answer never reached the worker)
    asks this occurrence again."""
    parameters = _advance_parameters(branch_id, key_hash, occurrence, attempt)
    _ADVANCE_OCCURRENCE.rows(parameters, session=session)


def advance_occurrences(
    branch_id: int, answered: dict[str, tuple[int, str | None]], *, session: Session
) -> None:
    """`advance_occurrence` for many keys at once, one statement (a lease holder's batch of
    hits: store/branch_leases.py); `answered`: each key's latest occurrence and its attempt."""
    if not answered:
        return
    parameters = [
        _advance_parameters(branch_id, key, occurrence, attempt)
        for key, (occurrence, attempt) in answered.items()
    ]
    rows = batch_rows.rows_parameter(parameters, _BATCH_COLUMNS)
    _ADVANCE_BATCH.rows({**rows, "branch_id": branch_id}, session=session)


_BATCH_COLUMNS = ("key_hash", "count", "attempt")
_ADVANCE_BATCH = Prepared(partial(_advance_statement, batch=True))


def advance_occurrence_later(
    branch_id: int, key_hash: str, occurrence: int, *, attempt: str | None = None, unit: Unit
) -> None:
    """`advance_occurrence` with the unit's commit (PostgreSQL: in its round trip)."""
    parameters = _advance_parameters(branch_id, key_hash, occurrence, attempt)
    unit.write_later(_ADVANCE_OCCURRENCE, parameters)


_TAKE_EVENT_SEQ = Prepared(
    lambda _dialect: (
        update(_branches)
        .where(_branches.c.id == bindparam("branch_id"))
        .values(event_count=_branches.c.event_count + 1)
        .returning(_branches.c.event_count)
    )
)


def take_event_seq(branch_id: int, *, session: Executor) -> int:
    """The branch's next event number, taken atomically: a write."""
    row = _TAKE_EVENT_SEQ.first({"branch_id": branch_id}, session=session)
    if row is None:
        raise LookupError(f"branch {branch_id} does not exist")
    return int(row[0])
