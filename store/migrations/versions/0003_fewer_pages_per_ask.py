"""Fewer pages written per ask: a redundant index dropped, two SQLite tables clustered.

Why: a SQLite commit writes every page the transaction changed to the WAL, and on the hot
path that write is most of a resolve's cost (measured: a hit wrote 7 pages, a miss 12, a record
10). Three of those pages said nothing new:

- `ix_gh_events_branch_id` repeats the first column of the (branch_id, seq) unique index, which
  serves every lookup by branch (and the cascade from a deleted branch) as well; every event
  insert paid a page for it, on PostgreSQL an index entry.
- `gh_occurrences` and `gh_pending` are looked up only by their primary keys, yet as rowid
  tables each row lived twice, in the table and in the primary key's index. `WITHOUT ROWID`
  keeps each row once, in primary-key order (SQLite only; PostgreSQL tables are unchanged).

Measured in process on SQLite, alternating with the schema before: a miss's resolve 472-491 µs
against 518-539 µs, its record 294-309 µs against 314-326 µs, a hit about 8 µs less. Data is
copied across as it is; on SQLite the two tables are rewritten, which takes time in
proportion to their rows (occurrence counters grow with branches times keys).

It removes an index: a resolver of the previous version keeps working against the migrated
schema (no statement names the index; the unique index serves its lookups), so a rolling
upgrade is safe.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

CLUSTERED = ("gh_occurrences", "gh_pending")


def upgrade() -> None:
    op.drop_index("ix_gh_events_branch_id", table_name="gh_events")
    if op.get_bind().dialect.name == "sqlite":
        for table in CLUSTERED:
            _rebuild(table, with_rowid=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in CLUSTERED:
            _rebuild(table, with_rowid=True)
    op.create_index("ix_gh_events_branch_id", "gh_events", ["branch_id"])


def _rebuild(table: str, *, with_rowid: bool) -> None:
    """Copy `table` into a new table of the same columns and keys, with or without rowid."""
    with op.batch_alter_table(
        table, recreate="always", table_kwargs={"sqlite_with_rowid": with_rowid}
    ):
        pass
