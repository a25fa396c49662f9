"""A branch's two atomic counters: how often each key was asked, and its next event number.

An ask's address includes its occurrence (how many times the branch's lineage asked the same
key before), and a branch's events are numbered in the order they happened; both must be taken
atomically by concurrent resolves of one branch, on any resolver replica, or two asks would get
the same address or event number. Each is taken by one write statement that returns the new
value (an upsert for the occurrence, an UPDATE … RETURNING for the event number). Every function
takes `session=` and never commits.
"""

from __future__ import annotations

from sqlalchemy import Insert, bindparam, update

from store.models import Branch, OccurrenceCounter
from store.prepared import Executor, Prepared
from store.upsert import insert_for_dialect

_branches = Branch.__table__


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
