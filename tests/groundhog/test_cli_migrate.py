"""`groundhog migrate`: migrates the store in --data (or --database-url), and `--check`s it."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from groundhog.cli import app
from store.db import make_engine
from tests.store.test_migrate import HEAD, old_store, revision_of

runner = CliRunner()


def test_migrate_then_check_the_default_store_in_data(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'groundhog.sqlite3'}", create_schema=False)
    try:
        old_store(engine)

        behind = runner.invoke(
            app,
            ["migrate", "--data", str(tmp_path), "--check"],
            env={"GROUNDHOG_DATABASE_URL": None},
        )
        assert behind.exit_code == 1
        assert f"behind the newest revision {HEAD}" in behind.output
        assert revision_of(engine) == "0001"

        done = runner.invoke(
            app, ["migrate", "--data", str(tmp_path)], env={"GROUNDHOG_DATABASE_URL": None}
        )
        assert done.exit_code == 0, done.output
        assert "migrated: schema at revision 0001" in done.output
        assert revision_of(engine) == HEAD

        again = runner.invoke(
            app, ["migrate", "--data", str(tmp_path)], env={"GROUNDHOG_DATABASE_URL": None}
        )
        assert again.exit_code == 0 and "nothing to do" in again.output
    finally:
        engine.dispose()


def test_migrate_an_unreachable_database_names_it(tmp_path: Path) -> None:
    url = "postgresql+psycopg://nobody:secret@127.0.0.1:1/none?connect_timeout=2"
    result = runner.invoke(
        app, ["migrate", "--database-url", url], env={"GROUNDHOG_DATABASE_URL": None}
    )
    assert result.exit_code == 1
    assert "cannot reach the store" in result.output
    assert "secret" not in result.output
