"""SQLAlchemy Core statements compiled once per dialect and run on the session's own connection.

Every `/v1/resolve` runs the same handful of small statements (tape and branch, occurrence,
versions, answer, event). Through `Session.execute`, SQLAlchemy's per-execution machinery (the
ORM session layer, the execution context, parameter and result wrapping) costs several times
the database's own work for them: about 150 us a statement against 20 us for the driver on the
development machine, which made a resolve hit several times slower than the driver-level SQL it
replaces. A `Prepared` statement is an ordinary Core construct built from the models; SQLAlchemy's
compiler renders it once per dialect (SQL text and parameter style are SQLAlchemy's, never
hand-written), and each execution runs that text on the DBAPI connection of the session's (or
Core connection's, store/unit.py) transaction — same transaction, locks and commit as anything
else run there. Result
columns go through their types' own result processors (JSON kept as text by SQLite, 0/1
booleans), and driver errors are raised as SQLAlchemy's exceptions, so callers see one error type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine


@dataclass(frozen=True)
class _Compiled:
    """One statement as one dialect runs it."""

    sql: str
    positional: tuple[str, ...] | None  # parameter order for positional drivers (SQLite)
    literals: dict[str, Any]  # values the statement itself holds (e.g. the 1 of `count + 1`)
    binds: tuple[tuple[str, Callable[[Any], Any]], ...]  # type processors of parameters
    columns: tuple[TypeEngine[Any], ...]  # the result columns' types (none: returns no rows)
    dialect: Dialect


def _compile(statement: ClauseElement, dialect: Dialect) -> _Compiled:
    compiled = statement.compile(dialect=dialect)
    if not isinstance(compiled, SQLCompiler):  # DDL compiles otherwise, and has no binds
        raise TypeError(f"not a SQL statement: {statement!r}")
    literals = {
        name: bind.value
        for name, bind in compiled.binds.items()
        if not bind.required and bind.callable is None
    }
    binds = []
    for name, bind in compiled.binds.items():
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None:
            binds.append((name, processor))
    columns = tuple(column.type for column in getattr(statement, "exported_columns", ()))
    positional = tuple(compiled.positiontup or ()) if compiled.positional else None
    return _Compiled(compiled.string, positional, literals, tuple(binds), columns, dialect)


_Processors = tuple[tuple[int, Callable[[Any], Any]], ...]


def _result_processors(compiled: _Compiled, description: Sequence[Any] | None) -> _Processors:
    """Each result column's type processor, told the driver's type of the column.

    As SQLAlchemy does for its own results, the type code comes from the cursor's description:
    some processors depend on it (PostgreSQL's Float and Numeric decode by the column's type
    oid and refuse to guess without one).
    """
    if not description:
        return ()
    processors = []
    for index, type_ in enumerate(compiled.columns[: len(description)]):
        impl = type_.dialect_impl(compiled.dialect)
        processor = impl.result_processor(compiled.dialect, description[index][1])
        if processor is not None:
            processors.append((index, processor))
    return tuple(processors)


# Where a prepared statement runs: a Session's transaction, or a Core connection's (store/unit.py).
Executor = Session | Connection

_CURSOR_KEY = "store.prepared.cursor"


def dialect_of(executor: Executor) -> Dialect:
    if isinstance(executor, Connection):
        return executor.dialect
    return executor.get_bind().dialect


def _cursor_of(session: Executor) -> tuple[Any, Dialect]:
    """A DBAPI cursor on the connection of the session's current transaction, and its dialect.

    One cursor per DBAPI connection serves every prepared statement run on it: each fetches
    all its rows at once, so none interleave, and a fresh cursor per statement cost a tenth of
    a statement's time on PostgreSQL. A Core connection keeps it in its pooled connection's
    `info` (which lives as long as that DBAPI connection). `Session.connection()` walks the
    session's transaction state on every call (about a fifth of a hit's time when called per
    statement); the connection cannot change within a transaction, so a Session keeps the
    cursor in `session.info` next to the transaction it belongs to.
    """
    if isinstance(session, Connection):
        driver = session.connection.driver_connection
        info = session.info
        cached = info.get(_CURSOR_KEY)
        if cached is None or cached[0] is not driver:
            if driver is None:  # `Connection.connection` revalidates, so only a pool bug
                raise RuntimeError("the pooled connection holds no DBAPI connection")
            cached = (driver, driver.cursor())
            info[_CURSOR_KEY] = cached
        return cached[1], session.dialect
    transaction = session.get_transaction()
    cached = session.info.get(_CURSOR_KEY)
    if cached is not None and transaction is not None and cached[0] is transaction:
        return cached[1], cached[2]
    connection = session.connection()
    cursor, dialect = _cursor_of(connection)
    session.info[_CURSOR_KEY] = (session.get_transaction(), cursor, dialect)
    return cursor, dialect


class Prepared:
    """A Core statement (built by `build` for a dialect name), compiled once per dialect."""

    def __init__(self, build: Callable[[str], ClauseElement]) -> None:
        self._build = build
        self._compiled: dict[str, _Compiled] = {}
        self._results: dict[str, _Processors] = {}

    def _for(self, dialect: Dialect) -> _Compiled:
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = _compile(self._build(dialect.name), dialect)
            self._compiled[dialect.name] = compiled
        return compiled

    def _bound(
        self, parameters: Mapping[str, Any], dialect: Dialect
    ) -> tuple[_Compiled, Sequence[Any] | Mapping[str, Any]]:
        """The statement as `dialect` runs it, and its arguments in the driver's style."""
        compiled = self._for(dialect)
        values = parameters
        if compiled.literals or compiled.binds:
            values = {**compiled.literals, **parameters}
            for name, processor in compiled.binds:
                values[name] = processor(values[name])
        arguments: Sequence[Any] | Mapping[str, Any] = values
        if compiled.positional is not None:
            arguments = [values[name] for name in compiled.positional]
        return compiled, arguments

    def rows(self, parameters: Mapping[str, Any], *, session: Executor) -> list[tuple[Any, ...]]:
        """Run it inside the session's (or connection's) transaction; every row, type-processed."""
        cursor, dialect = _cursor_of(session)
        compiled, arguments = self._bound(parameters, dialect)
        errors = compiled.dialect.loaded_dbapi.Error
        try:
            cursor.execute(compiled.sql, arguments)
            # Whether it returns rows is known from the statement: asking the cursor for its
            # description builds column objects on every call (psycopg), so only once.
            fetched = cursor.fetchall() if compiled.columns else []
            results = self._results.get(dialect.name)
            if results is None:
                results = _result_processors(compiled, cursor.description)
                self._results[dialect.name] = results
        except errors as error:
            raise DBAPIError.instance(
                compiled.sql, arguments, error, errors, dialect=compiled.dialect
            ) from error
        if not results:
            return [tuple(row) for row in fetched]
        rows = []
        for row in fetched:
            processed = list(row)
            for index, processor in results:
                processed[index] = processor(processed[index])
            rows.append(tuple(processed))
        return rows

    def first(self, parameters: Mapping[str, Any], *, session: Executor) -> tuple[Any, ...] | None:
        rows = self.rows(parameters, session=session)
        return rows[0] if rows else None


def run_then_commit(
    connection: Connection, statements: Sequence[tuple[Prepared, Mapping[str, Any]]]
) -> None:
    """PostgreSQL: run `statements` (their results unread) and COMMIT in one round trip.

    They go in one psycopg pipeline, the COMMIT last, so the server answers them all at once:
    a resolve's event insert and its commit cost one round trip instead of two. The commit is
    the server's; SQLAlchemy's own commit afterwards finds the driver idle and sends nothing.
    If any statement fails, the pipeline skips the rest (the COMMIT included) and the error is
    raised as SQLAlchemy's, the transaction still open for the caller to roll back.
    """
    cursor, dialect = _cursor_of(connection)
    if dialect.name != "postgresql":
        raise ValueError(f"run_then_commit pipelines PostgreSQL only, not {dialect.name}")
    errors = dialect.loaded_dbapi.Error
    sql, arguments = "COMMIT", None
    try:
        with cursor.connection.pipeline():
            for statement, parameters in statements:
                compiled, bound = statement._bound(parameters, dialect)
                sql, arguments = compiled.sql, bound
                cursor.execute(sql, arguments)
            sql, arguments = "COMMIT", None
            cursor.execute(sql)
    except errors as error:
        raise DBAPIError.instance(sql, arguments, error, errors, dialect=dialect) from error
