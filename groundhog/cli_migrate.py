"""`groundhog migrate`: bring a store's schema to this version's, or check that it is.

The resolver migrates on start unless it runs with `--no-migrate` (then it refuses an old store
and names this command). Operators who migrate before rolling out replicas — a Kubernetes Job,
an init container — need a command that does only that and says what it did; without it they
would have to start a resolver and watch its log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from groundhog.cli_common import DEFAULT_DATA, console, fail


def migrate(
    database_url: Annotated[
        str | None,
        typer.Option(
            envvar="GROUNDHOG_DATABASE_URL",
            help="sqlite:///PATH or postgresql+psycopg://… (default: the SQLite store in --data).",
        ),
    ] = None,
    data: Annotated[
        Path,
        typer.Option(
            "--data", envvar="GROUNDHOG_DATA_DIR", help="Directory of the default SQLite store."
        ),
    ] = DEFAULT_DATA,
    check: Annotated[
        bool, typer.Option("--check", help="Change nothing; exit 1 unless the schema is current.")
    ] = False,
) -> None:
    """Migrate the store's schema to the newest revision (safe to run while replicas start)."""
    # Imported here: the store pulls in SQLAlchemy and Alembic, which other commands never need.
    from sqlalchemy.exc import OperationalError

    from resolver.settings import load_settings
    from store import migrate as schema
    from store.db import make_engine

    url = load_settings(data_dir=data, database_url=database_url).database_url
    engine = make_engine(url, create_schema=False)
    try:
        if check:
            console.print(schema.check(engine).describe())
            return
        before = schema.upgrade(engine)
        if before.up_to_date:
            console.print(f"nothing to do: {before.describe()}")
        else:
            console.print(f"migrated: {before.describe()}; now at revision {before.head}")
    except schema.SchemaError as error:
        raise fail(str(error)) from None
    except OperationalError as error:
        shown = engine.url.render_as_string(hide_password=True)
        raise fail(f"cannot reach the store {shown}: {error.orig}") from None
    finally:
        engine.dispose()
