"""A branch remembers which of its lineage's sessions each sandbox session id stands for.

Why: a tape rule may name a resource per session (`notes:{session}`). The world's session id
differs from sibling to sibling and from the recording to a sealed replay (whose session id the
proxy mints), so the resource is named by the label of the ask that opened the session (its key
and occurrence), and this table maps the id's keyed hash to that label, per branch.

A new table: a resolver of the previous version never reads it, so a rolling upgrade is safe
(`{session}` names nothing on a replica that does not know it, as before).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "gh_sandbox_sessions",
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("session_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(["branch_id"], ["gh_branches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("branch_id", "session_hash"),
    )


def downgrade() -> None:
    op.drop_table("gh_sandbox_sessions")
