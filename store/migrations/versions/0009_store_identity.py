"""A store names itself: one row in `gh_store` holding a random token, made with the store.

Why: row ids are unique within one store only (a fresh database numbers its tapes from 1 again),
and a sidecar proxy keeps recorded answers by tape id on its disk across restarts
(proxy/answer_disk.py). The lease grant carries this token and the sidecar files its answers
under it, so a proxy whose resolver now runs on a new store is never served the old store's
bytes at a reused tape id.

A new table and its one row: a resolver of the previous version never reads it, so a rolling
upgrade is safe.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "gh_store",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.bulk_insert(table, [{"id": 1, "token": secrets.token_hex(16)}])


def downgrade() -> None:
    op.drop_table("gh_store")
