"""Store fixtures: every store test runs on SQLite and on PostgreSQL (skipped where absent)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store.db import Store
from tests.support.store_databases import store_of_kind


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with store_of_kind(request, tmp_path / "nested" / "store.sqlite3") as opened:
        yield opened
