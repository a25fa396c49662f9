"""A branch may be leased to one sidecar proxy, which then answers the branch's hits itself.

Why: every hit is a round trip to the shared resolver and its store; a proxy that holds a
branch's lease (issue 34) keeps the branch's counters and answers its recorded reads locally,
shipping their events behind. One row per branch ever leased: `holder` (the proxy's holder id,
NULL once released), `epoch` (raised by every grant to a new holder, kept on release: a stale
holder's events are refused by it), `expires` (wall time) and `revoke` (someone needs the
branch's state: the holder flushes and releases) and `shipped` (the serial of the last event
applied at this epoch: a batch shipped again after a lost answer is applied once).

A new table: a resolver of the previous version never reads it, so a rolling upgrade is safe
while no proxy asks for a lease.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "gh_branch_leases",
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("holder", sa.String(length=64), nullable=True),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("expires", sa.Float(), nullable=False),
        sa.Column("revoke", sa.Boolean(), nullable=False),
        sa.Column("shipped", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["branch_id"], ["gh_branches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("branch_id"),
    )


def downgrade() -> None:
    op.drop_table("gh_branch_leases")
