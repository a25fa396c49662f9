"""Private PostgreSQL schemas for store and resolver tests (owned by the store/resolver tests).

Several engineers run tests against one PostgreSQL database at once; each test gets its own
schema (via the connection's search_path) and drops it afterwards, so runs never collide.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from store.db import Store, open_store


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@contextlib.contextmanager
def private_schema_url(postgres_url: str) -> Iterator[str]:
    """A SQLAlchemy URL whose connections live in a fresh schema, dropped on exit."""
    schema = f"gh_test_{secrets.token_hex(6)}"
    with psycopg.connect(_plain(postgres_url), autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in postgres_url else "?"
    try:
        yield f"{postgres_url}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(_plain(postgres_url), autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def named_connections_url(url: str, application_name: str) -> str:
    """`url` with its connections labelled, so a test can find (and end) exactly those."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}application_name={quote(application_name)}"


def end_connections(postgres_url: str, application_name: str) -> list[int]:
    """Terminate every backend of `application_name`, waiting until each has exited; their pids.

    What a server restart or an administrator's pg_terminate_backend does to a pooled connection.
    """
    with psycopg.connect(_plain(postgres_url), autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid, pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        ).fetchall()
    assert all(ended for _, ended in rows), rows
    return [pid for pid, _ in rows]


@contextlib.contextmanager
def store_of_kind(request: pytest.FixtureRequest, sqlite_path: Path) -> Iterator[Store]:
    """The store a fixture parametrised by `"sqlite"` / `"postgresql"` asks for: a SQLite file at
    `sqlite_path`, or a private schema of the test PostgreSQL (the `postgres_url` fixture)."""
    if request.param == "sqlite":
        opened = open_store(f"sqlite:///{sqlite_path}")
        try:
            yield opened
        finally:
            opened.dispose()
        return
    with private_schema_url(request.getfixturevalue("postgres_url")) as url:
        opened = open_store(url)
        try:
            yield opened
        finally:
            opened.dispose()
