"""A branch's occurrence counter remembers the attempt that last advanced it.

Why: occurrences are taken by answers, not attempts (DESIGN §4). A resolve that commits a hit
and dies before its answer reaches the proxy (a `kill -9` between the commit and the write to
the socket) has advanced its lineage though the worker saw nothing: its retry asked the next
occurrence, and its siblings met it one occurrence apart. The proxy now sends an attempt id
with each ask and sends the same id again when it retries an ask that got no answer; the
counter keeps the id of the ask that advanced it last, and an ask carrying that id is given the
occurrence its first try took instead of a new one (store/counters.py).

It adds a nullable column: a resolver of the previous version never reads it (and its upsert
leaves it as it is), so a rolling upgrade is safe.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("gh_occurrences") as batch:
        batch.add_column(sa.Column("attempt", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gh_occurrences") as batch:
        batch.drop_column("attempt")
