"""One short transaction on a SQLAlchemy Core connection, with an ORM Session only if needed.

Every `/v1/resolve` is one transaction of a few prepared statements (store/prepared.py); a
Session's own begin, commit and close cost about as much again as all of them (its transaction
state machine, identity map and event hooks), though a plain hit loads no mapped object. A
`Unit` runs the transaction on a Core `Connection` (`engine.connect()` and `begin()`, the same
pool, the same SQLite `BEGIN IMMEDIATE` hook and write lock as `transaction(store.write)`), and
gives the steps that do need the ORM (claims, pending records, near misses) a Session joined to
that connection's transaction the first time one asks. The caller owns the transaction:
repository functions run on `unit.connection` or `unit.session` and never commit; the unit
commits once when its block ends (flushing its Session first) and rolls back if it raises.

A write whose result nobody reads (a served ask's event) can wait for the commit
(`write_later`): on PostgreSQL it then shares the COMMIT's round trip, one fewer per resolve.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, RootTransaction
from sqlalchemy.orm import Session

from store.db import Store
from store.prepared import Prepared, run_then_commit


class Unit:
    """A transaction's Core connection, and its ORM Session made on first use."""

    def __init__(self, connection: Connection, store: Store, *, write: bool) -> None:
        self.connection = connection
        self._store = store
        self._write = write
        self._session: Session | None = None
        self._later: list[tuple[Prepared, Mapping[str, Any]]] = []
        self._pipelines = connection.dialect.name == "postgresql"

    @property
    def session(self) -> Session:
        """A Session in this unit's transaction; it never commits or ends the transaction."""
        if self._session is None:
            factory = self._store.write if self._write else self._store.read
            self._session = factory(bind=self.connection, join_transaction_mode="rollback_only")
        return self._session

    def write_later(self, statement: Prepared, parameters: Mapping[str, Any]) -> None:
        """Run `statement`, whose result nobody reads, when the unit commits; on PostgreSQL in
        the COMMIT's round trip. Elsewhere (SQLite is in process: no round trip to save) now.

        It runs after everything else in the unit, the Session's flush included, and an error
        it raises surfaces when the block ends, rolling the unit back."""
        if self._pipelines:
            self._later.append((statement, dict(parameters)))
        else:
            statement.rows(parameters, session=self.connection)

    def _commit(self, transaction: RootTransaction) -> None:
        if self._session is not None:
            self._session.flush()
        if self._later:
            later, self._later = self._later, []
            run_then_commit(self.connection, later)
        transaction.commit()

    def _close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _bind(store: Store, *, write: bool) -> Engine:
    """The engine behind the store's session factory (the reader's begins DEFERRED on SQLite)."""
    factory = store.write if write else store.read
    bind = factory.kw.get("bind", store.engine)
    return bind if isinstance(bind, Engine) else store.engine


@contextmanager
def unit_of_work(store: Store, *, write: bool = True) -> Iterator[Unit]:
    """What `transaction(store.write)` (or `store.read`) opens, on a Core connection.

    Commits when the block ends and rolls back if it raises; on SQLite a write unit holds the
    store's in-process write lock for its whole length, as a write Session does.
    """
    lock = store.write_lock if write else None
    if lock is not None:
        lock.acquire()
    try:
        with (
            _bind(store, write=write).connect() as connection,
            unit_in(connection.begin(), store, write=write) as unit,
        ):
            yield unit
    finally:
        if lock is not None:
            lock.release()


@contextmanager
def unit_in(transaction: RootTransaction, store: Store, *, write: bool) -> Iterator[Unit]:
    """A unit on a begun transaction: flushed and committed when the block ends, rolled back
    if it raises (shared with `store.loop_writes`, which begins its transactions its own way).
    """
    unit = Unit(transaction.connection, store, write=write)
    try:
        yield unit
        unit._commit(transaction)
    except BaseException:
        transaction.rollback()
        raise
    finally:
        unit._close()
