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
"""

from __future__ import annotations

from sqlalchemy import Insert, bindparam, func, update

from store.models import Branch, OccurrenceCounter
from store.prepared import Executor, Prepared
from store.unit import Unit
from store.upsert import insert_for_dialect

_branches = Branch.__table__
_occurrences = OccurrenceCounter.__table__


def take_occurrence_statement(dialect: str) -> Insert:
    """The occurrence counter's upsert, returning the new count (`store.fused` embeds it)."""
    table = OccurrenceCounter.__table__
    statement = insert_for_dialect(dialect, table).values(
        branch_id=bindparam("branch_id"), key_hash=bindparam("key_hash"), count=1
    )
    return statement.on_conflict_do_update(
        index_elements=["branch_id", "key_hash"], set_={"count": table.c["count"] + 1}
    ).returning(table.c["count"])


_TAKE_OCCURRENCE = Prepared(take_occurrence_statement)


def take_occurrence(branch_id: int, key_hash: str, *, session: Executor) -> int:
    """This ask's occurrence (asks of the key before it), counting it atomically: a write."""
    row = _TAKE_OCCURRENCE.first({"branch_id": branch_id, "key_hash": key_hash}, session=session)
    assert row is not None
    return int(row[0]) - 1


_GIVE_BACK_OCCURRENCE = Prepared(
    lambda _dialect: (
        update(_occurrences)
        .where(
            _occurrences.c.branch_id == bindparam("branch_id"),
            _occurrences.c.key_hash == bindparam("key_hash"),
        )
        .values(count=_occurrences.c["count"] - 1)
    )
)


def give_back_occurrence_later(branch_id: int, key_hash: str, *, unit: Unit) -> None:
    """Undo this transaction's `take_occurrence` (its row is locked since): the ask leaves
    without an answer. With the unit's commit (PostgreSQL: in its round trip)."""
    unit.write_later(_GIVE_BACK_OCCURRENCE, {"branch_id": branch_id, "key_hash": key_hash})


def _advance_statement(dialect: str) -> Insert:
    statement = insert_for_dialect(dialect, _occurrences).values(
        branch_id=bindparam("branch_id"), key_hash=bindparam("key_hash"), count=bindparam("count")
    )
    larger = func.greatest if dialect == "postgresql" else func.max
    counted = larger(_occurrences.c["count"], statement.excluded["count"])
    return statement.on_conflict_do_update(
        index_elements=["branch_id", "key_hash"], set_={"count": counted}
    )


_ADVANCE_OCCURRENCE = Prepared(_advance_statement)


def advance_occurrence(
    branch_id: int, key_hash: str, occurrence: int, *, session: Executor
) -> None:
    """An answer at `occurrence` was given: the branch's count of the key is at least one past
    it (never moved back: a record and its waiters may advance it in any order)."""
    parameters = {"branch_id": branch_id, "key_hash": key_hash, "count": occurrence + 1}
    _ADVANCE_OCCURRENCE.rows(parameters, session=session)


def advance_occurrence_later(branch_id: int, key_hash: str, occurrence: int, *, unit: Unit) -> None:
    """`advance_occurrence` with the unit's commit (PostgreSQL: in its round trip)."""
    parameters = {"branch_id": branch_id, "key_hash": key_hash, "count": occurrence + 1}
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
