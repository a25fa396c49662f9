"""Each branch keeps its own answer to a write it sent live.

Why: a write is answered by the branch's own sandbox (DESIGN §4). Four siblings that log in
each get their own session id from the world, but the address's exchange keeps only the first
recording, so a sealed replay served every lineage the first branch's session. The new table
holds each branch's answer at the write's address; a sealed tape serves the nearest one in the
asker's lineage and falls back to the exchange.

A new table: a resolver of the previous version never reads it, so a rolling upgrade is safe
(writes recorded by an old replica meanwhile have only their exchange, as before).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "gh_write_answers",
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("occurrence", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=100), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=False),
        sa.Column("response_headers", sa.JSON(), nullable=False),
        sa.Column("response_body_sha", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["branch_id"], ["gh_branches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("branch_id", "key_hash", "occurrence", "fingerprint"),
    )


def downgrade() -> None:
    op.drop_table("gh_write_answers")
