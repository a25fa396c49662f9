"""Write transactions the event loop may run itself, because they never wait (SQLite only).

A resolve hit is a few hundred microseconds of SQLite work, and handing it to a worker thread
and back cost about as much again (the loop sleeps in `select`, the worker wakes, the GIL
changes hands twice). Run on the loop instead, a transaction must never block it: not on the
in-process write lock, not on another process's lock on the file (SQLite's busy handler sleeps),
not on a checkpoint's fsync. A `LoopWriter` gives such transactions: its one connection has no
busy timeout and never checkpoints, `unit()` raises `WouldWait` instead of queueing when anyone
else is writing, and a background thread checkpoints the WAL that its commits grow. The caller
then does the same work on a worker thread, where waiting is harmless. Without it every resolve
pays the thread hop; with its waits on the loop, one slow writer would stall every request.

Only for SQLite at `synchronous=NORMAL` (a commit in WAL mode writes but does not fsync); at
FULL every commit fsyncs and PostgreSQL talks over a socket, so `for_store` gives None there.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, RootTransaction, create_engine, event
from sqlalchemy.pool import StaticPool

from store.db import Store
from store.errors import StoreError
from store.unit import Unit, unit_in

logger = logging.getLogger(__name__)

SQLITE_SYNCHRONOUS_NORMAL = 1  # what `PRAGMA synchronous` reads for NORMAL
# A hit's commit adds a few WAL pages; SQLite's own default checkpoints every 1000 pages.
COMMITS_PER_CHECKPOINT = 256


class WouldWait(StoreError):
    """The transaction would have to wait for another writer: run it on a worker thread."""


class Checkpointer:
    """Copies the WAL back into the database on its own thread, when asked.

    The loop connection never checkpoints (that fsyncs), so without this a store written only
    through it would grow its WAL without bound, and reads slow down as it grows.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._wanted = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        """Checkpoint soon, on the checkpoint thread (started on the first request)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
            self._thread.start()
        self._wanted.set()

    def stop(self) -> None:
        self._stopping = True
        self._wanted.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._stopping:
                return
            try:
                self.checkpoint()
            except Exception:  # a full disk, a closed store: the next request tries again
                logger.warning("WAL checkpoint failed", exc_info=True)

    def checkpoint(self) -> None:
        # PASSIVE copies what no reader still needs and never waits for, or blocks, anyone.
        with self._engine.raw_connection() as raw:
            _sqlite(raw.driver_connection).execute("PRAGMA wal_checkpoint(PASSIVE)")


class LoopWriter:
    """Write units on one connection that never waits; see the module docstring."""

    def __init__(self, store: Store, *, commits_per_checkpoint: int = COMMITS_PER_CHECKPOINT):
        self._store = store
        self._lock = store.write_lock
        self._engine = _no_wait_engine(store.engine)
        self._checkpointer = Checkpointer(store.engine)
        self._commits_per_checkpoint = commits_per_checkpoint
        self._commits = 0
        # Kept open between units: checking a connection out of the pool and back in (its
        # reset-on-return rollback included) cost about a tenth of a hit's transaction.
        self._connection: Connection | None = None

    @classmethod
    def for_store(cls, store: Store) -> LoopWriter | None:
        """A writer for `store`, or None where a commit could block (see the module docstring)."""
        if store.engine.dialect.name != "sqlite" or store.write_lock is None:
            return None
        with store.engine.raw_connection() as raw:
            cursor = _sqlite(raw.driver_connection).execute("PRAGMA synchronous")
            level = cursor.fetchone()[0]
        if level != SQLITE_SYNCHRONOUS_NORMAL:
            return None
        return cls(store)

    @contextmanager
    def unit(self) -> Iterator[Unit]:
        """A write unit like `store.unit.unit_of_work`'s, or `WouldWait` before anything runs."""
        assert self._lock is not None
        if not self._lock.acquire(blocking=False):
            raise WouldWait("another transaction of this process is writing")
        try:
            with unit_in(_begin(self._open_connection()), self._store, write=True) as unit:
                yield unit
        finally:
            self._lock.release()
        self._commits += 1
        if self._commits % self._commits_per_checkpoint == 0:
            self._checkpointer.request()

    def _open_connection(self) -> Connection:
        """The writer's connection, opened anew if an error closed or invalidated it."""
        connection = self._connection
        if connection is None or connection.closed or connection.invalidated:
            connection = self._connection = self._engine.connect()
        return connection

    def close(self) -> None:
        self._checkpointer.stop()
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._engine.dispose()


def _begin(connection: Connection) -> RootTransaction:
    """BEGIN IMMEDIATE at once, or `WouldWait` if another connection holds the write lock."""
    try:
        _sqlite(connection.connection.driver_connection).execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        if "locked" in str(error):  # SQLITE_BUSY, answered at once: the busy timeout is 0
            raise WouldWait("another process holds the store's write lock") from error
        raise
    # pysqlite in autocommit mode issues no BEGIN of its own: this only marks the transaction.
    return connection.begin()


def _no_wait_engine(engine: Engine) -> Engine:
    """One connection to `engine`'s file that never waits on a lock and never checkpoints."""
    no_wait = create_engine(
        engine.url, poolclass=StaticPool, connect_args={"check_same_thread": False}
    )

    @event.listens_for(no_wait, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        dbapi_connection.isolation_level = None  # `_begin` issues BEGIN IMMEDIATE itself
        # The file is in WAL mode already (the store's engine switched it when it opened).
        for pragma in ("busy_timeout=0", "foreign_keys=ON", "synchronous=NORMAL"):
            dbapi_connection.execute(f"PRAGMA {pragma}")
        dbapi_connection.execute("PRAGMA wal_autocheckpoint=0")

    return no_wait


def _sqlite(driver_connection: object) -> sqlite3.Connection:
    assert isinstance(driver_connection, sqlite3.Connection), driver_connection
    return driver_connection
