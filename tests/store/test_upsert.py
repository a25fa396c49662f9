"""Unit tests of store/upsert.py: one ON CONFLICT insert construct per supported dialect."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, select
from sqlalchemy.orm import Session

from store.db import Store, transaction
from store.upsert import insert_for

_metadata = MetaData()
_pairs = Table(
    "upsert_pairs",
    _metadata,
    Column("name", String, primary_key=True),
    Column("value", Integer, nullable=False),
)


def test_on_conflict_works_on_the_store_dialects(store: Store) -> None:
    _metadata.create_all(store.engine)
    try:
        with transaction(store.write) as session:
            for value in (1, 2):
                statement = insert_for(session, _pairs).values(name="a", value=value)
                session.execute(statement.on_conflict_do_nothing(index_elements=["name"]))
            first_wins = session.scalar(select(_pairs.c.value).where(_pairs.c.name == "a"))
            statement = insert_for(session, _pairs).values(name="a", value=3)
            session.execute(
                statement.on_conflict_do_update(index_elements=["name"], set_={"value": 3})
            )
            updated = session.scalar(select(_pairs.c.value).where(_pairs.c.name == "a"))
        assert (first_wins, updated) == (1, 3)
        assert store.engine.dialect.name in {"sqlite", "postgresql"}
    finally:
        _metadata.drop_all(store.engine)


def test_an_unsupported_dialect_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'x.sqlite3'}")
    monkeypatch.setattr(engine.dialect, "name", "mysql")
    with Session(engine) as session, pytest.raises(RuntimeError) as raised:
        insert_for(session, _pairs)
    assert "unsupported database dialect 'mysql'" in str(raised.value)
    assert "sqlite or postgresql" in str(raised.value)
    engine.dispose()
