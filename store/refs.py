"""The tape and branch as the resolve and record hot paths see them: plain values, one statement.

Every resolve starts by finding its tape (mode, config, dependency model) and branch id, and
every record reads its tape again. Loading the mapped `Tape` and `Branch` for that costs the
ORM's identity map and attribute instrumentation per request; `TapeRef` and `BranchRef` are
frozen values read by a Core statement compiled once (store/prepared.py). Without this module
the hot paths would pay that, or each build its own lookup. `store.fused` builds its one-trip
statements from the lookup here (`TAPE_AND_BRANCH`, `RELAX_COMMIT`, `refs_from_row`), so what
it returns is the same as what `find_tape_and_branch` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Text, bindparam, cast, func, select
from sqlalchemy.sql import ClauseElement

from engine.refs import BranchRef, TapeRef
from store.models import Branch, BranchLease, Tape
from store.prepared import Executor, Prepared

# Core statements on the tables (not the mapped classes): no ORM compile step per execution.
_tapes, _branches, _leases = Tape.__table__, Branch.__table__, BranchLease.__table__
_TAPE_COLUMNS = (
    _tapes.c.id,
    _tapes.c.name,
    _tapes.c.world_seed,
    _tapes.c.mode,
    _tapes.c.online,
    _tapes.c.dependency_model,
    _tapes.c.config,
    cast(_tapes.c.config, Text).label("config_text"),
)
# The tape's columns then the branch's id and lease, for bind parameters `name` and `path`.
TAPE_AND_BRANCH = (
    select(
        *_TAPE_COLUMNS,
        _branches.c.id.label("branch_id"),
        _leases.c.holder.label("lease_holder"),
        _leases.c.expires.label("lease_expires"),
    )
    .join(_branches, _branches.c.tape_id == _tapes.c.id)
    .outerjoin(_leases, _leases.c.branch_id == _branches.c.id)
    .where(_tapes.c.name == bindparam("name"), _branches.c.path == bindparam("path"))
)
# How many of a row's leading values `refs_from_row` reads.
REF_COLUMNS = len(TAPE_AND_BRANCH.selected_columns)
RELAX_COMMIT = func.set_config("synchronous_commit", "off", True)


def refs_from_row(row: tuple[Any, ...], path: str) -> tuple[TapeRef, BranchRef]:
    """The refs from a row that starts with `TAPE_AND_BRANCH`'s columns."""
    (tape_id, name, world_seed, mode, online, dependency_model, config, text, branch_id) = row[:9]
    holder, expires = row[9:REF_COLUMNS]
    tape = TapeRef(
        tape_id, name, world_seed, mode, bool(online), dependency_model, config or {}, text
    )
    return tape, BranchRef(branch_id, path, holder, expires or 0.0)


_FIND_TAPE_AND_BRANCH = Prepared(lambda _dialect: TAPE_AND_BRANCH)


def _relaxing_statement(dialect: str) -> ClauseElement:
    """The lookup that also relaxes the transaction's commit, on PostgreSQL in the same trip.

    `set_config(…, true)` is `SET LOCAL` as a function, so it can ride in the select list of a
    statement the resolve runs anyway instead of costing a round trip of its own; it runs once
    per row, and there is exactly one row when the tape and branch exist (when they do not,
    the resolve ends in a 404 and commits nothing).
    """
    if dialect != "postgresql":
        return TAPE_AND_BRANCH
    return TAPE_AND_BRANCH.add_columns(RELAX_COMMIT)


_FIND_TAPE_AND_BRANCH_RELAXED = Prepared(_relaxing_statement)


def find_tape_and_branch(
    name: str, path: str, *, session: Executor, relax_commit: bool = False
) -> tuple[TapeRef, BranchRef] | None:
    """The tape's fields and the branch's id in one statement, or None if either is missing.

    `relax_commit` also makes this transaction's commit return before its WAL reaches the
    disk on PostgreSQL, as `store.db.relax_commit_durability` does (which says when that is
    allowed), without a statement of its own.
    """
    statement = _FIND_TAPE_AND_BRANCH_RELAXED if relax_commit else _FIND_TAPE_AND_BRANCH
    row = statement.first({"name": name, "path": path}, session=session)
    return None if row is None else refs_from_row(row, path)


# A tape's fields as `find_tape_ref` reads them (its config's text aside), for `tape_from_row`.
TAPE_COLUMNS = _TAPE_COLUMNS[:-1]
_TAPE_BY_ID = Prepared(
    lambda _dialect: select(*TAPE_COLUMNS).where(_tapes.c.id == bindparam("tape_id"))
)


def tape_from_row(row: Sequence[Any]) -> TapeRef:
    """The tape from a row of `TAPE_COLUMNS`' values."""
    tape_id, name, world_seed, mode, online, dependency_model, config = row
    return TapeRef(tape_id, name, world_seed, mode, bool(online), dependency_model, config or {})


def find_tape_ref(tape_id: int, *, session: Executor) -> TapeRef | None:
    """The tape's fields by id without loading the mapped object (every record reads them)."""
    row = _TAPE_BY_ID.first({"tape_id": tape_id}, session=session)
    return None if row is None else tape_from_row(row)
