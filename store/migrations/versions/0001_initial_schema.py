"""Initial schema: the store as Groundhog created it before migrations existed.

Why: every later revision starts from this one, and a store created by `create_all` before
migrations is stamped at this revision (store/migrate.py), so it must equal that schema
exactly. Frozen: it never imports store.models, which move on.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gh_blobs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("sha256"),
    )
    op.create_table(
        "gh_tapes",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("world_seed", sa.BigInteger(), nullable=False),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("online", sa.Boolean(), nullable=False),
        sa.Column("dependency_model", sa.String(length=20), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "gh_branches",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("tape_id", ID, nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("parent_path", sa.String(length=1000), nullable=True),
        sa.Column("fork_point", sa.Integer(), nullable=False),
        sa.Column("event_count", sa.Integer(), nullable=False),
        sa.Column("shim_counters", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["tape_id"], ["gh_tapes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tape_id", "path"),
    )
    op.create_index("ix_gh_branches_tape_id", "gh_branches", ["tape_id"])

    op.create_table(
        "gh_claims",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("tape_id", ID, nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("occurrence", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=100), nullable=False),
        sa.Column("ticket", sa.String(length=64), nullable=False),
        sa.Column("lease_expires", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["tape_id"], ["gh_tapes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tape_id", "key_hash", "occurrence", "fingerprint"),
    )
    op.create_index("ix_gh_claims_ticket", "gh_claims", ["ticket"])

    op.create_table(
        "gh_exchanges",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("tape_id", ID, nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("occurrence", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=100), nullable=False),
        sa.Column("key_readable", sa.Text(), nullable=False),
        sa.Column("request_method", sa.String(length=20), nullable=False),
        sa.Column("request_host", sa.String(length=300), nullable=False),
        sa.Column("request_url", sa.Text(), nullable=False),
        sa.Column("request_headers", sa.JSON(), nullable=False),
        sa.Column("request_body_sha", sa.String(length=64), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_headers", sa.JSON(), nullable=True),
        sa.Column("response_body_sha", sa.String(length=64), nullable=True),
        sa.Column("error_kind", sa.String(length=20), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["tape_id"], ["gh_tapes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tape_id", "key_hash", "occurrence", "fingerprint"),
    )
    op.create_index("ix_gh_exchanges_tape_id", "gh_exchanges", ["tape_id"])

    op.create_table(
        "gh_key_hints",
        sa.Column("tape_id", ID, nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("reads", sa.Text(), nullable=True),
        sa.Column("writes", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["tape_id"], ["gh_tapes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("tape_id", "key_hash"),
    )
    op.create_table(
        "gh_events",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(length=20), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("occurrence", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=100), nullable=False),
        sa.Column("decision", sa.String(length=20), nullable=False),
        sa.Column("is_read", sa.Boolean(), nullable=False),
        sa.Column("true_fingerprint_nonempty", sa.Boolean(), nullable=False),
        sa.Column("exchange_id", ID, nullable=True),
        sa.ForeignKeyConstraint(["branch_id"], ["gh_branches.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["exchange_id"], ["gh_exchanges.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("branch_id", "seq"),
    )
    op.create_index("ix_gh_events_branch_id", "gh_events", ["branch_id"])

    op.create_table(
        "gh_occurrences",
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["branch_id"], ["gh_branches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("branch_id", "key_hash"),
    )
    op.create_table(
        "gh_versions",
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("resource", sa.String(length=1000), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(["branch_id"], ["gh_branches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("branch_id", "resource"),
    )
    op.create_table(
        "gh_pending",
        sa.Column("ticket", sa.String(length=64), nullable=False),
        sa.Column("tape_id", ID, nullable=False),
        sa.Column("branch_id", ID, nullable=False),
        sa.Column("event_id", ID, nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("occurrence", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=100), nullable=False),
        sa.Column("decision", sa.String(length=20), nullable=False),
        sa.Column("is_write", sa.Boolean(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["branch_id"], ["gh_branches.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["event_id"], ["gh_events.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tape_id"], ["gh_tapes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("ticket"),
    )


def downgrade() -> None:
    op.drop_table("gh_pending")
    op.drop_table("gh_versions")
    op.drop_table("gh_occurrences")
    op.drop_index("ix_gh_events_branch_id", table_name="gh_events")

    op.drop_table("gh_events")
    op.drop_table("gh_key_hints")
    op.drop_index("ix_gh_exchanges_tape_id", table_name="gh_exchanges")

    op.drop_table("gh_exchanges")
    op.drop_index("ix_gh_claims_ticket", table_name="gh_claims")

    op.drop_table("gh_claims")
    op.drop_index("ix_gh_branches_tape_id", table_name="gh_branches")

    op.drop_table("gh_branches")
    op.drop_table("gh_tapes")
    op.drop_table("gh_blobs")
