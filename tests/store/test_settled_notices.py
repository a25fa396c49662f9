"""store/settled_notices.py: a settled address reaches every listener when, and only when, the
transaction that announced it commits; SQLite sends nothing (its stores are one process's)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from store.db import Store, transaction
from store.settled_notices import CHANNEL, announce, announce_later
from store.unit import unit_of_work


@pytest.fixture
def listening(store: Store) -> Iterator[psycopg.Connection]:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("only PostgreSQL has LISTEN/NOTIFY; SQLite is covered below")
    dsn = store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f"LISTEN {CHANNEL}")
        yield connection


def _received(connection: psycopg.Connection, tape_id: str) -> list[str]:
    """The notices about tape `tape_id` this listener got: the channel is the database's, so
    another Groundhog on the same database (a test run beside this one) announces on it too."""
    # A notification committed before this call is already queued on the connection, so a
    # short timeout only bounds the wait for one that was never sent.
    payloads = [notice.payload for notice in connection.notifies(timeout=1.0)]
    return [payload for payload in payloads if payload.split(":", 1)[0] == tape_id]


# A tape id no store of a test reaches: the notices these tests send name it.
TAPE = "987654321"


def test_a_committed_announcement_reaches_a_listener(
    store: Store, listening: psycopg.Connection
) -> None:
    with transaction(store.write) as session:
        announce(f"{TAPE}:0:key:fp", session=session)
    with unit_of_work(store) as unit:
        announce_later(f"{TAPE}:1:key:f:p", unit=unit)  # sent with the unit's COMMIT
    assert _received(listening, TAPE) == [f"{TAPE}:0:key:fp", f"{TAPE}:1:key:f:p"]


def test_a_rolled_back_announcement_reaches_nobody(
    store: Store, listening: psycopg.Connection
) -> None:
    with pytest.raises(RuntimeError), unit_of_work(store) as unit:
        announce_later(f"{TAPE}:0:key:fp", unit=unit)
        raise RuntimeError("the record failed")
    assert _received(listening, TAPE) == []


def test_sqlite_runs_no_notify_statement(store: Store) -> None:
    if store.engine.dialect.name != "sqlite":
        pytest.skip("the PostgreSQL cases are above")
    # SQLite has no pg_notify: running the statement there would raise "no such function".
    with unit_of_work(store) as unit:
        announce_later("1:0:key:fp", unit=unit)
    with transaction(store.write) as session:
        announce("1:0:key:fp", session=session)
