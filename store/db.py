"""Engine and session setup for the tape store, from one database URL.

The same code must run on an embedded SQLite file (one node) and on PostgreSQL (many resolver
replicas). Without this module every caller would repeat the SQLite pragmas that make concurrent
writers safe (WAL, busy timeout, `BEGIN IMMEDIATE`) and the resolver would hit `database is
locked` errors under load, or silently lose foreign keys.
"""

from __future__ import annotations

import logging
import os
import select
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from store import migrate
from store.prepared import Executor, Prepared, dialect_of

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000


def _prepare_sqlite_path(url: str) -> None:
    """Create the store file private to the service user (0600) before SQLite does.

    SQLite gives the `-wal` and `-shm` files the mode of the database file, so all three hold
    recorded traffic readable by the owner only. A directory created here is 0700; one that
    exists is the operator's (the resolver tightens its own data directory at start-up).
    """
    database = make_url(url).database
    if database and database != ":memory:" and not database.startswith("file:"):
        path = Path(database).expanduser()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            existing = Path(f"{path}{suffix}")
            if suffix and not existing.exists():
                continue
            try:
                os.close(os.open(existing, os.O_CREAT | os.O_WRONLY, 0o600))
                if stat.S_IMODE(existing.stat().st_mode) & 0o077:
                    os.chmod(existing, 0o600)
            except OSError as error:  # a read-only mount: SQLite will say what is wrong
                logger.warning("could not make %s private: %s", existing, error)


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """Put the file in WAL mode, waiting out a concurrent opener that holds its lock.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is
    locked" at once instead of calling the busy handler, so replicas that open a fresh store
    together would fail without this retry.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)  # another connection holds the lock for a moment


SQLITE_SYNCHRONOUS_LEVELS = ("NORMAL", "FULL")


def _install_sqlite_pragmas(engine: Engine, synchronous: str) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        # pysqlite's own transaction handling issues a deferred BEGIN; we issue our own below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        _switch_to_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        # A process crash (kill -9) cannot lose a committed WAL transaction at NORMAL; a power
        # loss can lose the last ones. FULL (an fsync per commit) survives that too.
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # A deferred transaction that later writes can fail at once with SQLITE_BUSY when
        # two writers race; taking the write lock up front makes busy_timeout apply instead.
        # Read-only sessions opt out (see `Store.read`), so polling never queues for the lock.
        # Straight on the driver: this runs once per transaction, and SQLAlchemy's execution
        # machinery would cost more than the BEGIN itself.
        begin = connection.get_execution_options().get("sqlite_begin", "IMMEDIATE")
        driver = connection.connection.driver_connection
        if driver is None:  # `Connection.connection` revalidates, so only a pool bug
            raise RuntimeError("the pooled connection holds no DBAPI connection")
        driver.execute(f"BEGIN {begin}")


def _server_hung_up(dbapi_connection: object) -> bool:
    """Whether an idle PostgreSQL connection was closed by the server, without a round trip.

    An idle pooled connection has nothing to read: the server only speaks when asked. When its
    backend ends (pg_terminate_backend, a restart, an idle timeout) the server sends its last
    words and closes the socket, which makes the socket readable; a zero-timeout poll sees that
    in microseconds, where a ping (`pool_pre_ping`) costs a round trip on every checkout. The
    rare healthy connection with something unread (a NOTICE, a changed parameter) is replaced
    too, which costs a reconnect and nothing else.
    """
    if getattr(dbapi_connection, "closed", False) or getattr(dbapi_connection, "broken", False):
        return True
    fileno = getattr(dbapi_connection, "fileno", None)
    if fileno is None:
        return False
    try:
        poller = select.poll()  # not select.select: a busy process has sockets past FD_SETSIZE
        poller.register(fileno(), select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))  # readable, hung up or in error: all mean "replace it"
    except (OSError, ValueError):  # no socket any more
        return True


def _install_liveness_check(engine: Engine) -> None:
    """Replace a pooled PostgreSQL connection the server has hung up on before handing it out.

    Raising `DisconnectionError` from a checkout listener is SQLAlchemy's documented way to
    have the pool discard that connection and check out a fresh one. A connection that dies
    after this check (a race of microseconds) fails its statement with an OperationalError,
    which the resolver answers with its 503 store-unavailable problem; the dead connection is
    invalidated when its transaction is rolled back, so the next request gets a new one.
    """

    @event.listens_for(engine, "checkout")
    def _on_checkout(
        dbapi_connection: DBAPIConnection,
        _record: ConnectionPoolEntry,
        _proxy: PoolProxiedConnection,
    ) -> None:
        if _server_hung_up(dbapi_connection):
            logger.info("the store's server closed a pooled connection; replacing it")
            raise DisconnectionError("the server closed this pooled connection")


def make_engine(
    url: str, *, create_schema: bool = True, sqlite_synchronous: str = "NORMAL"
) -> Engine:
    """An engine for `url` (sqlite:///… or postgresql+psycopg://…), schema migrated if asked.

    `create_schema` brings the store to the newest schema revision (store/migrate.py), under a
    lock so concurrent openers of one database do not race; False leaves the schema alone.
    `sqlite_synchronous` is NORMAL (crash-safe) or FULL (power-loss-safe); PostgreSQL ignores it.
    """
    if sqlite_synchronous not in SQLITE_SYNCHRONOUS_LEVELS:
        raise ValueError(f"sqlite_synchronous must be one of {SQLITE_SYNCHRONOUS_LEVELS}")
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite"):
        _prepare_sqlite_path(url)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        _install_sqlite_pragmas(engine, sqlite_synchronous)
    else:
        # No pool_pre_ping: its round trip per checkout was a sixth of a resolve hit's time;
        # `_install_liveness_check` gives the same guarantee for a closed connection without one.
        engine = create_engine(url, pool_size=20, max_overflow=20)
        _install_liveness_check(engine)
    if create_schema:
        try:
            migrate.upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
    logger.debug("store engine ready for %s", engine.url.render_as_string(hide_password=True))
    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


_RELAX_COMMIT = Prepared(lambda _dialect: text("SET LOCAL synchronous_commit = off"))


def relax_commit_durability(session: Executor) -> None:
    """On PostgreSQL, let this transaction's commit return before its WAL reaches disk.

    For the resolve path only (occurrence counters, events, claims): a PostgreSQL server crash
    may forget the last instants of those, never a recorded exchange, because `/v1/record`
    commits synchronously and a synchronous commit flushes every earlier WAL record too. This
    saves an fsync (milliseconds) per hit. SQLite (WAL, synchronous=NORMAL) needs nothing.
    """
    if dialect_of(session).name == "postgresql":
        _RELAX_COMMIT.rows({}, session=session)


@dataclass
class Store:
    """An engine with two session factories: `write` (takes the write lock) and `read`.

    `write_lock` is the in-process lock every `transaction(store.write)` holds on SQLite (one
    writer per file), None on PostgreSQL; anything else writing to the store queues on it too.
    """

    engine: Engine
    write: sessionmaker[Session]
    read: sessionmaker[Session]
    write_lock: threading.Lock | None = None

    def dispose(self) -> None:
        self.engine.dispose()


def open_store(
    url: str, *, migrate_schema: bool = True, sqlite_synchronous: str = "NORMAL"
) -> Store:
    """The store at `url`, its schema migrated to the newest revision.

    With `migrate_schema=False` the schema is left alone and must already be current:
    otherwise `store.migrate.SchemaOutOfDate` names the command that migrates it.
    """
    engine = make_engine(url, create_schema=migrate_schema, sqlite_synchronous=sqlite_synchronous)
    if not migrate_schema:
        try:
            migrate.check(engine)
        except BaseException:
            engine.dispose()
            raise
    reader = engine.execution_options(sqlite_begin="DEFERRED")
    write_lock = threading.Lock() if engine.dialect.name == "sqlite" else None
    info = {"write_lock": write_lock} if write_lock is not None else {}
    return Store(
        engine=engine,
        write=sessionmaker(bind=engine, expire_on_commit=False, info=info),
        read=sessionmaker(bind=reader, expire_on_commit=False),
        write_lock=write_lock,
    )


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any exception."""
    session = factory()
    # SQLite has one writer; queueing this process's writers on a lock avoids SQLite's
    # sleeping busy handler (which adds up to 100 ms per retry) for in-process contention.
    lock: threading.Lock | None = session.info.get("write_lock")
    if lock is not None:
        lock.acquire()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
        if lock is not None:
            lock.release()
