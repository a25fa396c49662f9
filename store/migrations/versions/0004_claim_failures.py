"""A claim remembers that its live call failed before the world answered.

Why: single flight must cover failures too (DESIGN §4, "Failures fly single too"). When the
holder's upstream call fails (connect, TLS, timeout), its record used to delete the claim, so
each waiter in turn claimed the address and made a live call of its own: k siblings behind an
upstream that never answers cost k timeouts. The claim row now stays, with the failure
(`{"kind", "message"}` as JSON) and a lapsed lease: the waiters of that attempt are served the
same `upstream-failed` problem at once, and the next fresh ask takes the row over and tries
again, once for the group.

It adds a nullable column: a resolver of the previous version ignores it (and deletes such
rows as it deletes any released claim), so a rolling upgrade is safe.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("gh_claims") as batch:
        batch.add_column(sa.Column("failure", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gh_claims") as batch:
        batch.drop_column("failure")
