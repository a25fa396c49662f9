"""Pre-built SQL for the statements every `/v1/resolve` runs, executed on the driver directly.

A hit costs one short transaction; most of its time was SQLAlchemy building, cache-keying and
wrapping statements and results, not the database. These statements are written once as
portable SQL (the same text runs on SQLite >= 3.35 and PostgreSQL: ON CONFLICT and RETURNING
exist in both), rendered once per driver parameter style, and run on the session's own DBAPI
connection, inside the session's transaction, skipping SQLAlchemy's per-statement machinery
(about 60 us per statement). Table and column names come from the models, so a renamed column
fails at import, not silently. Driver errors are translated to SQLAlchemy's exception classes,
so the resolver's handlers (503 for an unwritable store) see what they would have seen.
`driver_transaction` goes one step further for the plain hit: the whole transaction on a pooled
DBAPI connection, no Session at all.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from store.models import Blob, Branch, Event, Exchange, OccurrenceCounter, ResourceVersion, Tape

_NAMED_PARAMETER = re.compile(r":(\w+)")
_DRIVER_KEY = "store.hot.driver"


class _Statement:
    """One SQL text with `:name` parameters, in the spelling each driver wants."""

    def __init__(self, sql: str) -> None:
        self.named = sql  # sqlite3 accepts :name natively
        self.pyformat = _NAMED_PARAMETER.sub(r"%(\1)s", sql)  # psycopg

    def for_driver(self, paramstyle: str) -> str:
        return self.named if paramstyle == "named" or paramstyle == "qmark" else self.pyformat


class Driver(NamedTuple):
    """A DBAPI connection inside a write transaction, and how to speak to it.

    Either a Session's own connection (`transaction` is that Session's transaction, so the
    lookup is cached per transaction) or one from `driver_transaction` (`transaction` None).
    """

    transaction: Any
    connection: Any
    paramstyle: str
    dialect: Dialect


Executor = Session | Driver


def _driver(executor: Executor) -> Driver:
    """The DBAPI connection to run on; a Session's is looked up once per transaction."""
    if isinstance(executor, Driver):
        return executor
    session = executor
    transaction = session.get_transaction()
    cached: Driver | None = session.info.get(_DRIVER_KEY)
    if cached is not None and transaction is not None and cached.transaction is transaction:
        return cached
    connection = session.connection()
    driver = Driver(
        session.get_transaction(),
        connection.connection.driver_connection,
        connection.dialect.paramstyle,
        connection.dialect,
    )
    session.info[_DRIVER_KEY] = driver
    return driver


def _translated(driver: Driver, error: Exception, sql: str, parameters: Any) -> Exception:
    """A driver error as the SQLAlchemy exception the resolver's handlers know (503 etc.)."""
    return DBAPIError.instance(
        sql, parameters, error, driver.dialect.loaded_dbapi.Error, dialect=driver.dialect
    )


def _execute(executor: Executor, statement: _Statement, parameters: Mapping[str, Any]) -> Any:
    """Run on the DBAPI connection (inside its transaction); a driver cursor back."""
    driver = _driver(executor)
    sql = statement.for_driver(driver.paramstyle)
    try:
        return driver.connection.execute(sql, parameters)
    except driver.dialect.loaded_dbapi.Error as error:
        raise _translated(driver, error, sql, parameters) from error


_BEGIN_IMMEDIATE = _Statement("BEGIN IMMEDIATE")
# Same reasoning as store.db.relax_commit_durability: only the resolve path's bookkeeping.
_RELAX_COMMIT = _Statement("SET LOCAL synchronous_commit = off")


@contextmanager
def driver_transaction(engine: Engine, write_lock: threading.Lock | None) -> Iterator[Driver]:
    """One write transaction straight on a pooled DBAPI connection, for the resolve hit.

    The same transaction `store.db.transaction(store.write)` opens (SQLite: the in-process
    write lock, then `BEGIN IMMEDIATE`; PostgreSQL: relaxed commit durability), without the
    Session and Connection layers, which cost more than the whole hit's SQL (about 120 us).
    Commits when the block ends, rolls back if it raises.
    """
    if write_lock is not None:
        write_lock.acquire()
    try:
        pooled = engine.raw_connection()
        try:
            driver = Driver(
                None, pooled.driver_connection, engine.dialect.paramstyle, engine.dialect
            )
            sqlite = engine.dialect.name == "sqlite"
            _execute(driver, _BEGIN_IMMEDIATE if sqlite else _RELAX_COMMIT, {})
            try:
                yield driver
            except BaseException:
                with contextlib.suppress(Exception):  # the original error is what matters
                    driver.connection.rollback()
                raise
            try:
                driver.connection.commit()
            except engine.dialect.loaded_dbapi.Error as error:
                with contextlib.suppress(Exception):
                    driver.connection.rollback()
                raise _translated(driver, error, "COMMIT", None) from error
        finally:
            pooled.close()
    finally:
        if write_lock is not None:
            write_lock.release()


_TAPE_AND_BRANCH = _Statement(
    f"SELECT t.id, t.name, t.world_seed, t.mode, t.online, t.dependency_model, t.config, "
    f"b.id FROM {Tape.__tablename__} t JOIN {Branch.__tablename__} b "
    "ON b.tape_id = t.id WHERE t.name = :name AND b.path = :path"
)

_TAKE_OCCURRENCE = _Statement(
    f"INSERT INTO {OccurrenceCounter.__tablename__} (branch_id, key_hash, count) "
    "VALUES (:branch_id, :key_hash, 1) ON CONFLICT (branch_id, key_hash) "
    f"DO UPDATE SET count = {OccurrenceCounter.__tablename__}.count + 1 RETURNING count"
)

_TAKE_EVENT_SEQ = _Statement(
    f"UPDATE {Branch.__tablename__} SET event_count = event_count + 1 "
    "WHERE id = :branch_id RETURNING event_count"
)

_EVENT_COLUMNS = (
    "branch_id", "seq", "method", "url", "key_hash", "occurrence", "fingerprint", "decision",
    "is_read", "true_fingerprint_nonempty", "exchange_id",
)  # fmt: skip
_ADD_EVENT = _Statement(
    f"INSERT INTO {Event.__tablename__} ({', '.join(_EVENT_COLUMNS)}) "
    f"VALUES ({', '.join(':' + name for name in _EVENT_COLUMNS)}) RETURNING id"
)

_FIND_ANSWER = _Statement(
    "SELECT e.id, e.response_status, e.response_headers, e.response_body_sha, b.data, "
    f"e.error_kind FROM {Exchange.__tablename__} e LEFT JOIN {Blob.__tablename__} b "
    "ON b.sha256 = e.response_body_sha WHERE e.tape_id = :tape_id AND e.key_hash = :key_hash "
    "AND e.occurrence = :occurrence AND e.fingerprint = :fingerprint"
)

_versions_statements: dict[int, _Statement] = {}


def _versions_of_statement(count: int) -> _Statement:
    statement = _versions_statements.get(count)
    if statement is None:
        placeholders = ", ".join(f":r{index}" for index in range(count))
        statement = _Statement(
            f"SELECT resource, version FROM {ResourceVersion.__tablename__} "
            f"WHERE branch_id = :branch_id AND resource IN ({placeholders})"
        )
        if count <= 64:  # a resolve names a handful of resources; do not cache odd sizes
            _versions_statements[count] = statement
    return statement


class TapeAndBranch(NamedTuple):
    id: int
    name: str
    world_seed: int
    mode: str
    online: bool
    dependency_model: str
    config: dict[str, Any]
    branch_id: int


def tape_and_branch(tape_name: str, path: str, *, session: Executor) -> TapeAndBranch | None:
    """The tape's fields and `branch_id`, or None if either is missing."""
    row = _execute(session, _TAPE_AND_BRANCH, {"name": tape_name, "path": path}).fetchone()
    if row is None:
        return None
    tape_id, name, world_seed, mode, online, dependency_model, config, branch_id = row
    if isinstance(config, str | bytes):  # SQLite keeps JSON as text; psycopg parses it
        config = json.loads(config)
    return TapeAndBranch(
        tape_id, name, world_seed, mode, bool(online), dependency_model, config or {}, branch_id
    )


class RecordedAnswer(NamedTuple):
    """An exchange's answer with its body, read in one statement for the resolve path."""

    exchange_id: int
    status: int | None
    headers: list[list[str]]
    body_sha: str | None
    body: bytes | None  # None when the exchange has no body, or its blob is missing
    error_kind: str | None


def find_answer(
    tape_id: int, key_hash: str, occurrence: int, fingerprint: str, *, session: Executor
) -> RecordedAnswer | None:
    """The answer recorded at this address, or None."""
    parameters = {
        "tape_id": tape_id,
        "key_hash": key_hash,
        "occurrence": occurrence,
        "fingerprint": fingerprint,
    }
    row = _execute(session, _FIND_ANSWER, parameters).fetchone()
    if row is None:
        return None
    exchange_id, status, headers, body_sha, body, error_kind = row
    if isinstance(headers, str | bytes):
        headers = json.loads(headers)
    return RecordedAnswer(
        exchange_id,
        status,
        headers or [],
        body_sha,
        None if body is None else bytes(body),
        error_kind,
    )


def take_occurrence(branch_id: int, key_hash: str, *, session: Executor) -> int:
    parameters = {"branch_id": branch_id, "key_hash": key_hash}
    return int(_execute(session, _TAKE_OCCURRENCE, parameters).fetchone()[0]) - 1


def take_event_seq(branch_id: int, *, session: Executor) -> int:
    row = _execute(session, _TAKE_EVENT_SEQ, {"branch_id": branch_id}).fetchone()
    if row is None:
        raise LookupError(f"branch {branch_id} does not exist")
    return int(row[0])


def versions_of(branch_id: int, resources: set[str], *, session: Executor) -> dict[str, str]:
    if not resources:
        return {}
    ordered = sorted(resources)
    parameters: dict[str, Any] = {f"r{index}": name for index, name in enumerate(ordered)}
    parameters["branch_id"] = branch_id
    rows = _execute(session, _versions_of_statement(len(ordered)), parameters).fetchall()
    return {resource: version for resource, version in rows}


def add_event(*, session: Executor, **fields: Any) -> int:
    missing = set(_EVENT_COLUMNS) - fields.keys()
    if missing:
        raise TypeError(f"add_event is missing {sorted(missing)}")
    return int(_execute(session, _ADD_EVENT, fields).fetchone()[0])
