"""Engine setup: SQLite pragmas that make concurrent writers and crashes safe."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.db import open_store, transaction


def test_sqlite_creates_parent_dir_and_sets_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "store.sqlite3"
    store = open_store(f"sqlite:///{path}")
    assert path.exists()
    with transaction(store.write) as session:
        connection = session.connection()
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    store.dispose()


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    from store import repository

    store = open_store(f"sqlite:///{tmp_path / 's.sqlite3'}")
    try:
        with transaction(store.write) as session:
            repository.create_tape(
                session=session,
                name="t",
                world_seed=0,
                mode="naive",
                online=True,
                dependency_model="closure",
                config={},
            )
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with transaction(store.read) as session:
        assert repository.get_tape("t", session=session) is None
    store.dispose()


def test_sqlite_synchronous_is_normal_unless_full_is_asked(tmp_path: Path) -> None:
    # PRAGMA synchronous reads 1 for NORMAL (crash-safe) and 2 for FULL (power-loss-safe).
    for level, expected in (("NORMAL", 1), ("FULL", 2)):
        store = open_store(f"sqlite:///{tmp_path}/{level}.sqlite3", sqlite_synchronous=level)
        with transaction(store.write) as session:
            pragma = session.connection().exec_driver_sql("PRAGMA synchronous").scalar()
        store.dispose()
        assert pragma == expected
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        open_store(f"sqlite:///{tmp_path}/off.sqlite3", sqlite_synchronous="OFF")
