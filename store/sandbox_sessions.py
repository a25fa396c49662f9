"""Which session of its lineage a sandbox session id stands for: remembered, then looked up.

A rule's `{session}` placeholder names a resource per session (`notes:{session}`); the name
must be the same for a recording and its sealed replay and for siblings that each opened their
own session, though every one of them holds another session id. The resolver names a session by
the label of the ask that opened it (engine/session_labels.py) and keeps, per branch, the
keyed hash of each session id it saw opened with that label; an ask carrying the id finds the
label in its lineage, nearest branch first (a fork goes on with its parent's session). Without
this module `{session}` could only be the id itself, and a sealed replay would miss every read
after a session's first write. Functions take `session=` and never commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select

from store.lineage import lineage_cte
from store.models import SandboxSession
from store.prepared import Executor, Prepared
from store.unit import Unit
from store.upsert import insert_for_dialect

_sessions = SandboxSession.__table__


def _remember_statement(dialect: str) -> Any:
    # The same id opened again (a retried `initialize`) takes the label it was opened with last.
    insert = insert_for_dialect(dialect, _sessions).values(
        branch_id=bindparam("branch_id"),
        session_hash=bindparam("session_hash"),
        label=bindparam("label"),
    )
    return insert.on_conflict_do_update(
        index_elements=["branch_id", "session_hash"], set_={"label": insert.excluded.label}
    )


_REMEMBER = Prepared(_remember_statement)


def remember_session_later(branch_id: int, session_hash: str, label: str, *, unit: Unit) -> None:
    """The branch opened the session whose id hashes to `session_hash` as `label` (written with
    the unit's commit)."""
    unit.write_later(
        _REMEMBER, {"branch_id": branch_id, "session_hash": session_hash, "label": label}
    )


def _label_statement(_dialect: str) -> Any:
    lineage = lineage_cte()
    return (
        select(_sessions.c.label)
        .join(lineage, lineage.c.id == _sessions.c.branch_id)
        .where(_sessions.c.session_hash == bindparam("session_hash"))
        .order_by(lineage.c.depth)
        .limit(1)
    )


_LABEL = Prepared(_label_statement)


def lineage_session_label(
    tape_id: int, branch_id: int, session_hash: str, *, session: Executor
) -> str | None:
    """The label the nearest branch of the lineage opened this session with, or None."""
    parameters = {"tape_id": tape_id, "branch_id": branch_id, "session_hash": session_hash}
    row = _LABEL.first(parameters, session=session)
    return None if row is None else str(row[0])
