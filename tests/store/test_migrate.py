"""Schema migrations: a store an older Groundhog wrote opens in this one, data intact.

Every test runs on SQLite and on PostgreSQL (a private schema; skipped where absent).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from store import exchanges, migrate
from store.branches import get_branch
from store.db import Store, make_engine, open_store, transaction
from store.digest import tape_digest
from store.models import Base, Event, OccurrenceCounter, PendingRecord
from store.tapes import list_tapes
from tests.store.test_digest import ADDRESSES, fill
from tests.support.servers import REPO_ROOT
from tests.support.store_databases import private_schema_url

NEW_INDEX = "ix_gh_events_exchange_id"  # added by 0002
DROPPED_INDEX = "ix_gh_events_branch_id"  # dropped by 0003
HEAD = "0009"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database: no tables, no schema revision."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite3'}"
        return
    with private_schema_url(request.getfixturevalue("postgres_url")) as url:
        yield url


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url, create_schema=False)
    yield engine
    engine.dispose()


def old_store(engine: Engine, revision: str = migrate.BASELINE_REVISION) -> Store:
    """The store as a Groundhog at `revision` left it (without migrating further)."""
    migrate.upgrade(engine, revision)
    factory = sessionmaker(bind=engine, expire_on_commit=False)
    return Store(engine=engine, write=factory, read=factory)


def record_event(store: Store, tape_id: int) -> int:
    """An event pointing at the tape's first exchange: data in the column 0002 indexes."""
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        exchange = exchanges.find_exchange(tape_id, "a", 0, "", session=session)
        event = Event(
            branch_id=root.id,
            seq=1,
            method="GET",
            url="http://a/",
            key_hash="a",
            occurrence=0,
            fingerprint="",
            decision="recorded",
            is_read=True,
            exchange_id=exchange.id,
        )
        session.add(event)
        session.flush()
        return event.id


def indexes(engine: Engine, table: str) -> set[str]:
    return {index["name"] for index in inspect(engine).get_indexes(table)}


def revision_of(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return migrate.schema_status(connection).current


def drift(engine: Engine) -> list[object]:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(context, Base.metadata)


def test_migrations_build_exactly_the_models(engine: Engine) -> None:
    before = migrate.upgrade(engine)
    assert before.current is None and not before.has_tables
    assert revision_of(engine) == migrate.head_revision() == HEAD
    assert drift(engine) == []


def test_an_old_revision_differs_from_the_models(engine: Engine) -> None:
    # The drift check can fail: revision 0001 lacks what 0002 and 0004 to 0009 added and has
    # what 0003 dropped.
    old_store(engine)
    differences = drift(engine)
    named = [(d[0], d[3].name if d[0] == "add_column" else d[1].name) for d in differences]
    assert sorted(named) == [
        ("add_column", "attempt"),
        ("add_column", "failure"),
        ("add_index", NEW_INDEX),
        ("add_table", "gh_branch_leases"),
        ("add_table", "gh_sandbox_sessions"),
        ("add_table", "gh_store"),
        ("add_table", "gh_write_answers"),
        ("remove_index", DROPPED_INDEX),
    ]


def test_store_at_revision_1_upgrades_with_its_data(engine: Engine) -> None:
    store = old_store(engine)
    assert NEW_INDEX not in indexes(engine, "gh_events")
    tape_id = fill(store, "old", ADDRESSES)
    event_id = record_event(store, tape_id)

    before = migrate.upgrade(engine)

    assert before.current == "0001"
    assert revision_of(engine) == HEAD
    assert NEW_INDEX in indexes(engine, "gh_events")
    # The digest covers content (each branch's event order included) only, and the newest one
    # reads tables 0001 lacks: the old tape's digest equals that of the same content written at
    # the newest revision.
    twin = fill(store, "twin", ADDRESSES)
    record_event(store, twin)
    with transaction(store.read) as session:
        assert tape_digest(tape_id, session=session) == tape_digest(twin, session=session)
        assert session.get(Event, event_id).exchange_id is not None
        assert [t.name for t in list_tapes(session=session)] == ["old", "twin"]


def test_store_from_before_migrations_is_stamped_then_upgraded(engine: Engine) -> None:
    # Stores made by `create_all` had revision 0001's tables and no alembic_version table.
    store = old_store(engine)
    tape_id = fill(store, "unversioned", ADDRESSES)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE alembic_version"))
    assert revision_of(engine) is None

    before = migrate.upgrade(engine)

    assert before.current is None and before.has_tables
    assert revision_of(engine) == HEAD
    assert drift(engine) == []
    with transaction(store.read) as session:
        assert tape_digest(tape_id, session=session)[1] == len(ADDRESSES)


def test_refusing_to_migrate_names_the_command_and_changes_nothing(
    engine: Engine, database_url: str
) -> None:
    old_store(engine)
    with pytest.raises(migrate.SchemaOutOfDate) as refused:
        open_store(database_url, migrate_schema=False)
    message = str(refused.value)
    assert f"revision 0001, behind the newest revision {HEAD}" in message
    assert "groundhog migrate --database-url" in message
    assert "python -m store.migrate" in message
    assert revision_of(engine) == "0001"
    assert NEW_INDEX not in indexes(engine, "gh_events")


def test_refusing_an_empty_store_too(database_url: str) -> None:
    with pytest.raises(migrate.SchemaOutOfDate, match="empty store"):
        open_store(database_url, migrate_schema=False)


def test_current_store_opens_without_migrating(database_url: str) -> None:
    open_store(database_url).dispose()
    store = open_store(database_url, migrate_schema=False)
    store.dispose()


def test_a_store_from_a_newer_groundhog_is_left_alone(engine: Engine) -> None:
    migrate.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    for attempt in (migrate.upgrade, migrate.check):
        with pytest.raises(migrate.SchemaTooNew, match="a newer Groundhog migrated it"):
            attempt(engine)
    assert revision_of(engine) == "0099"


def test_concurrent_first_starts_create_the_schema_once(database_url: str) -> None:
    # Two replicas starting together on an empty database: one migrates, the other waits.
    engines = [make_engine(database_url, create_schema=False) for _ in range(3)]
    barrier = threading.Barrier(len(engines))
    outcomes: list[object] = []

    def start(engine: Engine) -> None:
        barrier.wait()
        try:
            outcomes.append(migrate.upgrade(engine).current)
        except Exception as error:  # collected: an assertion in a thread would be lost
            outcomes.append(error)

    threads = [threading.Thread(target=start, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    try:
        assert not any(thread.is_alive() for thread in threads), "a start never finished"
        # Exactly one saw the empty database; the others found it current.
        assert Counter(map(str, outcomes)) == {"None": 1, HEAD: 2}
        with engines[0].connect() as connection:
            versions = connection.execute(text("SELECT version_num FROM alembic_version"))
            assert versions.scalars().all() == [HEAD]
    finally:
        for engine in engines:
            engine.dispose()


def test_downgrade_of_the_second_revision_drops_only_its_index(engine: Engine) -> None:
    migrate.upgrade(engine)
    with engine.begin() as connection:
        command.downgrade(migrate.alembic_config(connection), "0001")
    assert NEW_INDEX not in indexes(engine, "gh_events")
    assert DROPPED_INDEX in indexes(engine, "gh_events")
    assert revision_of(engine) == "0001"


def reflected(engine: Engine) -> dict[str, object]:
    """Everything a database says about each table, in comparable form."""
    found = inspect(engine)
    return {
        table: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in found.get_columns(table)],
            found.get_pk_constraint(table)["constrained_columns"],
            sorted((i["name"], tuple(i["column_names"])) for i in found.get_indexes(table)),
            sorted(tuple(u["column_names"]) for u in found.get_unique_constraints(table)),
            sorted(
                (tuple(f["constrained_columns"]), f["referred_table"], f["options"].get("ondelete"))
                for f in found.get_foreign_keys(table)
            ),
        )
        for table in sorted(Base.metadata.tables)
    }


def test_plain_create_all_and_the_migrations_build_the_same_database(tmp_path: Path) -> None:
    plain = create_engine(f"sqlite:///{tmp_path / 'plain.sqlite3'}")
    migrated = make_engine(f"sqlite:///{tmp_path / 'migrated.sqlite3'}")
    try:
        Base.metadata.create_all(plain)
        assert reflected(plain) == reflected(migrated)
    finally:
        plain.dispose()
        migrated.dispose()


# --- the command line: python -m store.migrate ----------------------------------------------


def run_migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "store.migrate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_command_line_checks_then_upgrades(engine: Engine, database_url: str) -> None:
    store = old_store(engine)
    tape_id = fill(store, "cli", ADDRESSES)

    behind = run_migrate("--database-url", database_url, "check")
    assert behind.returncode == 1
    assert f"behind the newest revision {HEAD}" in behind.stderr
    assert revision_of(engine) == "0001"

    upgraded = run_migrate("--database-url", database_url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"now at revision {HEAD}" in upgraded.stderr

    current = run_migrate("--database-url", database_url, "check")
    assert current.returncode == 0, current.stderr
    assert current.stderr.strip() == f"schema at revision {HEAD} (current)"
    with transaction(store.read) as session:
        assert tape_digest(tape_id, session=session)[1] == len(ADDRESSES)


def test_command_line_without_a_database_says_how_to_give_one() -> None:
    result = run_migrate()
    assert result.returncode == 2
    assert "give --database-url URL or set GROUNDHOG_DATABASE_URL" in result.stderr


def sqlite_table_sql(engine: Engine, table: str) -> str:
    with engine.connect() as connection:
        found = connection.execute(
            text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :name"),
            {"name": table},
        )
        return str(found.scalar_one())


def test_revision_3_keeps_counters_and_pending_records_and_their_keys(engine: Engine) -> None:
    store = old_store(engine, "0002")
    tape_id = fill(store, "busy", ADDRESSES)
    event_id = record_event(store, tape_id)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        # Core, naming the columns revision 0002 has (the model has a later one, `attempt`).
        counters = OccurrenceCounter.__table__
        session.execute(counters.insert().values(branch_id=root.id, key_hash="a", count=3))
        session.add(
            PendingRecord(
                ticket="t1",
                tape_id=tape_id,
                branch_id=root.id,
                event_id=event_id,
                key_hash="b",
                occurrence=0,
                fingerprint="",
                decision="recorded",
                is_write=False,
                request={"url": "http://b/"},
                created=1.5,
            )
        )
    sqlite = engine.dialect.name == "sqlite"
    if sqlite:
        assert "WITHOUT ROWID" not in sqlite_table_sql(engine, "gh_occurrences")

    migrate.upgrade(engine)

    assert revision_of(engine) == HEAD and drift(engine) == []
    assert DROPPED_INDEX not in indexes(engine, "gh_events")
    if sqlite:
        for table in ("gh_occurrences", "gh_pending"):
            assert "WITHOUT ROWID" in sqlite_table_sql(engine, table)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        counter = session.get(OccurrenceCounter, (root.id, "a"))
        assert (counter.count, counter.attempt) == (3, None)
        pending = session.get(PendingRecord, "t1")
        assert (pending.event_id, pending.request, pending.created) == (
            event_id,
            {"url": "http://b/"},
            1.5,
        )
        # The keys came across: a second counter for the same (branch, key) is refused.
        session.add(OccurrenceCounter(branch_id=root.id, key_hash="a", count=1))
        with pytest.raises(IntegrityError):
            session.flush()
        session.rollback()

    with engine.begin() as connection:
        command.downgrade(migrate.alembic_config(connection), "0002")
    assert DROPPED_INDEX in indexes(engine, "gh_events")
    if sqlite:
        assert "WITHOUT ROWID" not in sqlite_table_sql(engine, "gh_pending")
    with transaction(store.read) as session:
        assert session.get(PendingRecord, "t1") is not None
