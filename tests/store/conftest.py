"""Store fixtures: every store test runs on SQLite and on PostgreSQL (skipped where absent)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store.db import Store, open_store
from tests.support.store_databases import private_schema_url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened = open_store(f"sqlite:///{tmp_path / 'nested' / 'store.sqlite3'}")
        yield opened
        opened.dispose()
        return
    postgres_url = request.getfixturevalue("postgres_url")
    with private_schema_url(postgres_url) as url:
        opened = open_store(url)
        yield opened
        opened.dispose()
