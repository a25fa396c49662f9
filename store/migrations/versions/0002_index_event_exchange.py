"""Index gh_events.exchange_id.

Why: deleting a tape deletes its exchanges, and for each one the database looks up the events
that point at it (the foreign key's ON DELETE SET NULL). PostgreSQL does not index a foreign
key's referencing column by itself, so without this index every deleted exchange scanned the
whole events table, the largest table of a store (one row per ask).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_gh_events_exchange_id", "gh_events", ["exchange_id"])


def downgrade() -> None:
    op.drop_index("ix_gh_events_exchange_id", table_name="gh_events")
