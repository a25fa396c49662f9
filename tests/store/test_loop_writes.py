"""Write units for the event loop: they commit, or say `WouldWait` at once and write nothing."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from store.db import Store, open_store
from store.loop_writes import LoopWriter, WouldWait
from store.unit import unit_of_work
from tests.support.servers import wait_until


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'loop.sqlite3'}")
    with opened.engine.begin() as connection:
        connection.execute(text("CREATE TABLE filler (n INTEGER, payload BLOB)"))
    yield opened
    opened.dispose()


def rows(store: Store) -> list[int]:
    with store.engine.connect() as connection:
        return list(connection.execute(text("SELECT n FROM filler ORDER BY n")).scalars())


def insert(writer: LoopWriter, n: int, payload: bytes = b"") -> None:
    with writer.unit() as unit:
        unit.connection.execute(
            text("INSERT INTO filler VALUES (:n, :payload)"), {"n": n, "payload": payload}
        )


def test_a_unit_commits_what_it_wrote(store: Store) -> None:
    writer = LoopWriter.for_store(store)
    assert writer is not None
    try:
        insert(writer, 1)
        insert(writer, 2)
    finally:
        writer.close()
    assert rows(store) == [1, 2]


def test_a_failing_unit_rolls_back(store: Store) -> None:
    writer = LoopWriter(store)
    try:
        with pytest.raises(RuntimeError), writer.unit() as unit:
            unit.connection.execute(text("INSERT INTO filler VALUES (1, NULL)"))
            raise RuntimeError("the resolve failed")
        insert(writer, 2)  # the lock and the connection were given back
    finally:
        writer.close()
    assert rows(store) == [2]


def test_units_share_one_connection_and_replace_an_invalidated_one(store: Store) -> None:
    writer = LoopWriter(store)
    try:
        with writer.unit() as first:
            pass
        with writer.unit() as second:
            pass
        assert second.connection is first.connection  # no pool checkout per unit
        with pytest.raises(RuntimeError), writer.unit() as broken:
            broken.connection.execute(text("INSERT INTO filler VALUES (1, NULL)"))
            broken.connection.invalidate()  # as SQLAlchemy does when the driver connection dies
            raise RuntimeError("the connection was lost")
        insert(writer, 2)  # on a new connection
        with writer.unit() as after:
            assert after.connection is not first.connection
    finally:
        writer.close()
    assert rows(store) == [2]


def test_it_would_wait_while_a_thread_of_this_process_writes(store: Store) -> None:
    writer = LoopWriter(store)
    holding, release = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        with unit_of_work(store):
            holding.set()
            release.wait()

    holder = threading.Thread(target=hold_the_write_lock)
    holder.start()
    try:
        holding.wait()
        with pytest.raises(WouldWait), writer.unit():
            pytest.fail("the unit ran while another writer held the lock")
    finally:
        release.set()
        holder.join()
    insert(writer, 1)  # and it writes once the other writer is done
    writer.close()
    assert rows(store) == [1]


def test_it_would_wait_at_once_while_another_process_holds_the_file(
    store: Store, tmp_path: Path
) -> None:
    # Another process's connection (a second replica) holds SQLite's write lock. Were the unit
    # to wait on SQLite's busy handler, this would hang until pytest's timeout.
    other = sqlite3.connect(tmp_path / "loop.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    writer = LoopWriter(store)
    try:
        with pytest.raises(WouldWait), writer.unit():
            pytest.fail("the unit ran while another connection held the write lock")
        other.execute("ROLLBACK")
        insert(writer, 1)
    finally:
        other.close()
        writer.close()
    assert rows(store) == [1]


def test_its_commits_never_checkpoint_and_the_checkpointer_does(
    store: Store, tmp_path: Path
) -> None:
    database = tmp_path / "loop.sqlite3"
    before = database.stat().st_size
    payload = bytes(64 * 1024)  # 16 pages a commit: 100 commits outgrow SQLite's 1000-page mark
    quiet = LoopWriter(store, commits_per_checkpoint=10**9)
    try:
        for n in range(100):
            insert(quiet, n, payload)
    finally:
        quiet.close()
    assert database.stat().st_size == before  # every page is still in the WAL

    writer = LoopWriter(store, commits_per_checkpoint=1)
    try:
        insert(writer, 100, payload)
        grown = lambda: database.stat().st_size > 100 * len(payload)  # noqa: E731
        wait_until(grown, timeout=60, what="the checkpoint thread to copy the WAL into the file")
    finally:
        writer.close()
    assert len(rows(store)) == 101


def test_no_writer_where_a_commit_would_fsync(tmp_path: Path) -> None:
    full = open_store(f"sqlite:///{tmp_path / 'full.sqlite3'}", sqlite_synchronous="FULL")
    try:
        assert LoopWriter.for_store(full) is None
    finally:
        full.dispose()


@pytest.mark.postgres
def test_no_writer_on_postgresql(postgres_url: str) -> None:
    store = open_store(postgres_url)
    try:
        assert LoopWriter.for_store(store) is None
    finally:
        store.dispose()
