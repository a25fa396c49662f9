"""Key hints: the resources a cooperative world named for a key (X-Groundhog-Reads / -Writes).

Under the `hints` dependency model a key's reads and writes are what the world said when the key
was first recorded; later asks of the key classify themselves by that, before anything else is
read. Without this module the resolve path would have no record of what a key touches. The first
recording wins, as for exchanges. Every function takes `session=` and never commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from engine.refs import Hint
from store.models import KeyHint
from store.prepared import Executor, Prepared
from store.upsert import insert_for_dialect


def get_hint(tape_id: int, key_hash: str, *, session: Session) -> KeyHint | None:
    return session.get(KeyHint, (tape_id, key_hash))


_hints = KeyHint.__table__
_FIND_HINT = Prepared(
    lambda _dialect: select(_hints.c.reads, _hints.c.writes).where(
        _hints.c.tape_id == bindparam("tape_id"), _hints.c.key_hash == bindparam("key_hash")
    )
)


def find_hint(tape_id: int, key_hash: str, *, session: Executor) -> Hint | None:
    row = _FIND_HINT.first({"tape_id": tape_id, "key_hash": key_hash}, session=session)
    return None if row is None else Hint(row[0], row[1] or "")


def _set_hint_statement(dialect: str) -> Any:
    statement = insert_for_dialect(dialect, _hints).values(
        tape_id=bindparam("tape_id"),
        key_hash=bindparam("key_hash"),
        reads=bindparam("reads"),
        writes=bindparam("writes"),
    )
    return statement.on_conflict_do_nothing(index_elements=["tape_id", "key_hash"])


_SET_HINT = Prepared(_set_hint_statement)


def set_hint(
    tape_id: int, key_hash: str, reads: str | None, writes: str, *, session: Executor
) -> None:
    """Keep the key's first hint (a later one is ignored), in one prepared statement."""
    parameters = {"tape_id": tape_id, "key_hash": key_hash, "reads": reads, "writes": writes}
    _SET_HINT.rows(parameters, session=session)
