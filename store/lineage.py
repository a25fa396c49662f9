"""A branch's lineage as one recursive query: the branch itself, its parent, … up to `root`.

A fork copies what a child must carry on from (counters, versions), but some of a branch's
state is looked up by lineage instead: its own answer to a write (store/write_answers.py) and
which of its lineage's sessions a sandbox session id stands for (store/sandbox_sessions.py).
Copying those on every fork would cost a fork in proportion to its parent's history; a
recursive CTE over `parent_path` finds them where they were written, nearest first (`depth`).
Without this module each lookup would spell its own recursion over the branch tree.
"""

from __future__ import annotations

from sqlalchemy import CTE, Integer, bindparam, literal, select

from store.models import Branch

_branches = Branch.__table__


def lineage_cte(name: str = "lineage") -> CTE:
    """Rows `(id, depth)` of the branch bound as `branch_id` and its ancestors on the tape
    bound as `tape_id`: depth 0 is the branch itself."""
    start = (
        select(_branches.c.id, _branches.c.parent_path, literal(0, Integer).label("depth"))
        .where(_branches.c.id == bindparam("branch_id"))
        .cte(name, recursive=True)
    )
    parent = _branches.alias(f"{name}_parent")
    return start.union_all(
        select(parent.c.id, parent.c.parent_path, start.c.depth + 1).where(
            parent.c.tape_id == bindparam("tape_id"), parent.c.path == start.c.parent_path
        )
    )
