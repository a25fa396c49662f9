"""Engine setup: SQLite pragmas that make concurrent writers and crashes safe."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from store.db import Store, open_store, transaction
from store.tapes import create_tape, get_tape, tape_exists
from store.unit import unit_of_work
from tests.support.store_databases import end_connections, named_connections_url, private_schema_url


def test_sqlite_creates_parent_dir_and_sets_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "store.sqlite3"
    store = open_store(f"sqlite:///{path}")
    assert path.exists()
    with transaction(store.write) as session:
        connection = session.connection()
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    store.dispose()


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:

    store = open_store(f"sqlite:///{tmp_path / 's.sqlite3'}")
    try:
        with transaction(store.write) as session:
            create_tape(
                session=session,
                name="t",
                world_seed=0,
                mode="naive",
                online=True,
                dependency_model="closure",
                config={},
            )
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with transaction(store.read) as session:
        assert get_tape("t", session=session) is None
    store.dispose()


def test_sqlite_synchronous_is_normal_unless_full_is_asked(tmp_path: Path) -> None:
    # PRAGMA synchronous reads 1 for NORMAL (crash-safe) and 2 for FULL (power-loss-safe).
    for level, expected in (("NORMAL", 1), ("FULL", 2)):
        store = open_store(f"sqlite:///{tmp_path}/{level}.sqlite3", sqlite_synchronous=level)
        with transaction(store.write) as session:
            pragma = session.connection().exec_driver_sql("PRAGMA synchronous").scalar()
        store.dispose()
        assert pragma == expected
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        open_store(f"sqlite:///{tmp_path}/off.sqlite3", sqlite_synchronous="OFF")


@pytest.fixture
def labelled_postgres(postgres_url: str) -> Iterator[tuple[Store, str]]:
    """A PostgreSQL store whose connections carry a label of their own, and that label."""
    label = f"gh-test-{secrets.token_hex(4)}"
    with private_schema_url(postgres_url) as url:
        store = open_store(named_connections_url(url, label))
        yield store, label
        store.dispose()


def _backend_pid(store: Store) -> int:
    with transaction(store.write) as session:
        return int(session.scalar(text("SELECT pg_backend_pid()")))


@pytest.mark.postgres
def test_a_pooled_connection_the_server_ended_is_replaced_on_checkout(
    labelled_postgres: tuple[Store, str], postgres_url: str
) -> None:
    store, label = labelled_postgres
    _backend_pid(store)
    ended = end_connections(postgres_url, label)
    assert ended  # the pool held at least one connection, now dead
    assert _backend_pid(store) not in ended  # no error: a fresh connection was checked out


@pytest.mark.postgres
def test_a_connection_ended_inside_a_transaction_fails_it_and_the_next_one_works(
    labelled_postgres: tuple[Store, str], postgres_url: str
) -> None:
    store, label = labelled_postgres
    with pytest.raises(OperationalError), unit_of_work(store) as unit:
        tape_exists("t", session=unit.connection)
        end_connections(postgres_url, label)
        tape_exists("t", session=unit.connection)  # a prepared statement (Core path)
    with pytest.raises(OperationalError), transaction(store.write) as session:
        session.scalar(text("SELECT 1"))
        end_connections(postgres_url, label)
        session.scalar(text("SELECT 1"))  # the ORM path
    with unit_of_work(store) as unit:
        assert not tape_exists("t", session=unit.connection)


@pytest.mark.postgres
def test_a_healthy_pooled_connection_is_kept(labelled_postgres: tuple[Store, str]) -> None:
    store, _label = labelled_postgres
    store.engine.dispose()  # one connection from here on, used in turn
    assert len({_backend_pid(store) for _ in range(5)}) == 1
