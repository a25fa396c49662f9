"""Dialect-neutral `INSERT … ON CONFLICT` for the two databases the store runs on.

Counters, claims and first-wins exchanges must be atomic under concurrent writers; doing
read-then-insert instead would race between resolver replicas. SQLite (>= 3.35) and PostgreSQL
both speak ON CONFLICT, but SQLAlchemy exposes it per dialect, so callers go through here.
"""

from __future__ import annotations

from sqlalchemy import TableClause
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

# Both have `on_conflict_do_nothing` and `on_conflict_do_update(index_elements=..., set_=...)`.
DialectInsert = postgresql.Insert | sqlite.Insert


def insert_for(session: Session, table: TableClause) -> DialectInsert:
    """An `insert(table)` construct that has `.on_conflict_do_*` for the session's dialect."""
    return insert_for_dialect(session.get_bind().dialect.name, table)


def insert_for_dialect(dialect: str, table: TableClause) -> DialectInsert:
    """The same for a dialect name, for statements built once per dialect and reused."""
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise RuntimeError(f"unsupported database dialect {dialect!r} (use sqlite or postgresql)")
