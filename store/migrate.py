"""Bring a store's schema to the revision this Groundhog expects (Alembic), or say how to.

A store outlives the code that wrote it: a SQLite file from last month, a PostgreSQL database
shared by resolver replicas that are upgraded one at a time. Without this module a newer
Groundhog would meet an older schema with a missing table or index and fail on its first
query, and two replicas starting together on an empty database would race to create the
tables (the loser crashing on "relation already exists").

Every migration runs inside one transaction that first takes a lock: a PostgreSQL advisory
lock (per schema), or SQLite's write lock (`BEGIN IMMEDIATE`, see store/db.py). The second
replica waits, then finds the schema current and does nothing. DDL is transactional on both
databases, so a failed migration leaves the previous schema intact.

    python -m store.migrate --database-url URL            # upgrade to the newest revision
    python -m store.migrate --database-url URL check      # exit 1 if the store is behind
    groundhog migrate --data DIR                          # the same, through the CLI
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text
from sqlalchemy.engine import Connection

from store.errors import StoreError

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
# Stores created before migrations existed have exactly this revision's schema, unversioned.
BASELINE_REVISION = "0001"
# A table every Groundhog store has had since the first release.
SENTINEL_TABLE = "gh_tapes"
MIGRATE_COMMAND = "groundhog migrate"


class SchemaError(StoreError, RuntimeError):
    """The store's schema is not one this Groundhog can use as it is."""


class SchemaOutOfDate(SchemaError):
    """The store is behind (or empty) and migrating on start is off."""


class SchemaTooNew(SchemaError):
    """The store was migrated by a newer Groundhog: this one must not touch it."""


@dataclass(frozen=True)
class SchemaStatus:
    """Where a store's schema stands against this code's migrations."""

    # None: no alembic_version row (an empty database, or a store from before migrations).
    current: str | None
    head: str
    has_tables: bool
    known: bool

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head

    def describe(self) -> str:
        if self.up_to_date:
            return f"schema at revision {self.current} (current)"
        if not self.known:
            return (
                f"schema at revision {self.current}, which this Groundhog (newest revision "
                f"{self.head}) does not know: a newer Groundhog migrated it. Upgrade Groundhog "
                "instead; never run an older one against this store"
            )
        if self.current is None and not self.has_tables:
            return f"empty store: no schema yet (newest revision {self.head})"
        if self.current is None:
            return (
                f"store from before schema migrations (revision {BASELINE_REVISION}, "
                f"unversioned); newest revision {self.head}"
            )
        return f"schema at revision {self.current}, behind the newest revision {self.head}"


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """Alembic's configuration, built in code: no alembic.ini has to travel with the package."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("file_template", "%%(rev)s_%%(slug)s")
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


@functools.cache
def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    head = script_directory().get_current_head()
    if head is None:
        raise SchemaError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def schema_status(connection: Connection) -> SchemaStatus:
    current = MigrationContext.configure(connection).get_current_revision()
    known = current is None or current in {
        rev.revision for rev in script_directory().walk_revisions()
    }
    return SchemaStatus(
        current=current,
        head=head_revision(),
        has_tables=inspect(connection).has_table(SENTINEL_TABLE),
        known=known,
    )


@contextmanager
def _locked(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the store's migration lock until it ends."""
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # Per schema, so stores in different schemas of one database never wait on each other.
            connection.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:key || current_schema()))"),
                {"key": "groundhog-migrate:"},
            )
        # SQLite: engine.begin() already issued BEGIN IMMEDIATE, the database's one write lock.
        yield connection


# Alembic runs a migration through module-global state (its `context` proxy, env.py's module):
# two threads migrating two stores at once mix up their connections, and one store gets the
# other's tables (two `tape verify` runs or exports at once on one resolver failed so).
_ALEMBIC_IN_PROCESS = threading.Lock()


def upgrade(engine: Engine, revision: str = "head") -> SchemaStatus:
    """Migrate the store to `revision` (the newest by default); answers the status before.

    An older `revision` is for tests that build a store as an older Groundhog left it.
    """
    with _ALEMBIC_IN_PROCESS, _locked(engine) as connection:
        status = schema_status(connection)
        if not status.known:
            raise SchemaTooNew(status.describe())
        target = status.head if revision == "head" else revision
        if status.current == target:
            return status
        config = alembic_config(connection)
        if status.current is None and status.has_tables:
            command.stamp(config, BASELINE_REVISION)
        command.upgrade(config, target)
        logger.info("store migrated: %s -> %s", status.current or "(none)", target)
        return status


def check(engine: Engine) -> SchemaStatus:
    """The store's status; raises unless it is at the newest revision."""
    with engine.connect() as connection:
        status = schema_status(connection)
    if not status.known:
        raise SchemaTooNew(status.describe())
    if not status.up_to_date:
        url = engine.url.render_as_string(hide_password=True)
        raise SchemaOutOfDate(
            f"{status.describe()}. Run `{MIGRATE_COMMAND} --database-url '{url}'` "
            f"(or `python -m store.migrate --database-url '{url}'`), or start without "
            "--no-migrate"
        )
    return status


def prepare(engine: Engine, *, migrate: bool) -> SchemaStatus:
    """What a server does on start: migrate, or refuse a store that is not current."""
    return upgrade(engine) if migrate else check(engine)


def new_revision(engine: Engine, message: str) -> Path:
    """For developers: write the next revision script from the models' difference to `engine`.

    `engine` should be a scratch database; it is first brought to the newest revision.
    """
    upgrade(engine)
    next_id = f"{int(head_revision()) + 1:04d}"
    with engine.begin() as connection:
        script = command.revision(
            alembic_config(connection), message=message, autogenerate=True, rev_id=next_id
        )
    script_directory.cache_clear()
    if script is None or isinstance(script, list):
        raise SchemaError("Alembic wrote no single revision script")
    return Path(script.path)


def main(argv: list[str] | None = None) -> int:
    # Imported here: store.db imports this module to migrate on open.
    from store.db import make_engine

    parser = argparse.ArgumentParser(
        prog="python -m store.migrate",
        description="Migrate a Groundhog store to the schema this version expects.",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("GROUNDHOG_DATABASE_URL"),
        help="sqlite:///PATH or postgresql+psycopg://… (default: $GROUNDHOG_DATABASE_URL)",
    )
    parser.add_argument(
        "action",
        nargs="?",
        default="upgrade",
        choices=["upgrade", "check", "revision"],
        help="upgrade (default); check: exit 1 unless current; revision: write a new script",
    )
    parser.add_argument("-m", "--message", help="revision: what the new revision changes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not args.database_url:
        parser.error("give --database-url URL or set GROUNDHOG_DATABASE_URL")
    if args.action == "revision" and not args.message:
        parser.error("revision needs -m MESSAGE")
    engine = make_engine(args.database_url, create_schema=False)
    try:
        if args.action == "revision":
            logger.info("wrote %s", new_revision(engine, args.message))
        elif args.action == "check":
            # Alembic announces its dialect at INFO; a check should print one line.
            logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)
            logger.info(check(engine).describe())
        else:
            before = upgrade(engine)
            logger.info("was: %s; now at revision %s", before.describe(), before.head)
    except SchemaError as error:
        logger.error("%s", error)
        return 1
    finally:
        engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
