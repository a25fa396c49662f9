"""The branch tree of a tape: find and list branches, their children, and forking.

A fork must start the child exactly where the parent stands — the parent's per-key occurrence
counters and resource versions copied, its event count as the fork point — or the child's asks
would land on other addresses than the parent's next asks and share nothing with its siblings.
This module does that copy in the database (one INSERT … SELECT per table) so a fork costs the
same however long the parent ran. Every function takes `session=` and never commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, Table, bindparam, select
from sqlalchemy.orm import Session

from store.models import Branch, OccurrenceCounter, ResourceVersion
from store.prepared import Prepared


def get_branch(tape_id: int, path: str, *, session: Session) -> Branch | None:
    query = select(Branch).where(Branch.tape_id == tape_id, Branch.path == path)
    return session.scalars(query).one_or_none()


def list_branches(tape_id: int, *, session: Session) -> list[Branch]:
    return list(
        session.scalars(select(Branch).where(Branch.tape_id == tape_id).order_by(Branch.path))
    )


def child_paths(tape_id: int, path: str, *, session: Session) -> list[str]:
    query = select(Branch.path).where(Branch.tape_id == tape_id, Branch.parent_path == path)
    return sorted(session.scalars(query))


def fork_branch(
    parent: Branch, child_path: str, shim_counters: dict[str, Any], *, session: Session
) -> Branch:
    """A child at the parent's current state: its counters and versions are copied."""
    child = Branch(
        tape_id=parent.tape_id,
        path=child_path,
        parent_path=parent.path,
        fork_point=parent.event_count,
        event_count=0,
        shim_counters=shim_counters,
    )
    session.add(child)
    session.flush()
    for statement in _COPY_TO_CHILD:
        statement.rows({"parent_id": parent.id, "child_id": child.id}, session=session)
    return child


def _copy_to_child(table: Table, columns: tuple[str, ...]) -> Prepared:
    """One table's rows of the parent copied to the child in a single INSERT … SELECT."""

    def build(_dialect: str) -> Any:
        rows = select(
            bindparam("child_id", type_=Integer), *(table.c[name] for name in columns)
        ).where(table.c.branch_id == bindparam("parent_id"))
        return table.insert().from_select(["branch_id", *columns], rows)

    return Prepared(build)


# Prepared once: built per fork through the session, the two copies were most of a fork's CPU.
_COPY_TO_CHILD = (
    _copy_to_child(OccurrenceCounter.__table__, ("key_hash", "count")),
    _copy_to_child(ResourceVersion.__table__, ("resource", "version")),
)
