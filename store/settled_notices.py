"""The statement that tells every resolver replica an address was settled (PostgreSQL only).

A record transaction announces the address it settled with `pg_notify`, which PostgreSQL
delivers only if the transaction commits, so a waiter on another replica wakes as soon as
the answer is there instead of at its next store poll (resolver/notify.py listens and encodes
the payload). Without it the statement would sit in the resolver, beside the lifecycle's steps
that must reach the store only through their unit. SQLite stores are one process's: nothing
is sent there.
"""

from __future__ import annotations

from sqlalchemy import bindparam, func, select

from store.prepared import Executor, Prepared, dialect_of
from store.unit import Unit

CHANNEL = "groundhog_settled"

_NOTIFY = Prepared(
    lambda _dialect: select(func.pg_notify(bindparam("channel"), bindparam("payload")))
)


def announce(payload: str, *, session: Executor) -> None:
    """Queue `payload` on the channel, sent when (and if) the session's transaction commits."""
    if dialect_of(session).name == "postgresql":
        _NOTIFY.rows({"channel": CHANNEL, "payload": payload}, session=session)


def announce_later(payload: str, *, unit: Unit) -> None:
    """`announce` with the unit's commit (in its round trip on PostgreSQL)."""
    if dialect_of(unit.connection).name == "postgresql":
        unit.write_later(_NOTIFY, {"channel": CHANNEL, "payload": payload})
