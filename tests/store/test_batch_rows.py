"""store/batch_rows.py on both stores: rows read from one JSON parameter land as given, types,
quotes, NULLs and booleans included, in one statement."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy import insert, select

from store import batch_rows
from store.db import Store, transaction
from store.models import Event
from tests.store.test_branch_leases import new_tape
from tests.support.store_databases import store_of_kind

COLUMNS = ("branch_id", "seq", "method", "url", "key_hash", "occurrence", "fingerprint",
           "decision", "is_read", "true_fingerprint_nonempty", "exchange_id")  # fmt: skip


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with store_of_kind(request, tmp_path / "batch.sqlite3") as opened:
        yield opened


def test_rows_land_as_given_in_one_statement(any_store: Store) -> None:
    (branch_id,) = new_tape(any_store, "t")
    rows = [
        {"branch_id": branch_id, "seq": seq, "method": "GET", "url": url, "key_hash": f"k{seq}",
         "occurrence": seq * 7, "fingerprint": "", "decision": "shared", "is_read": seq % 2 == 0,
         "true_fingerprint_nonempty": seq == 2, "exchange_id": None}
        for seq, url in enumerate(['http://w/"quoted"', "http://w/ünïcode?a=1&b='x'", "\\back"], 1)
    ]  # fmt: skip
    statements: list[str] = []
    sqlalchemy_event.listen(
        any_store.engine, "before_cursor_execute", lambda *a: statements.append(a[2])
    )
    with transaction(any_store.write) as session:
        dialect = session.get_bind().dialect.name
        table = Event.__table__
        statement = insert(table).from_select(
            COLUMNS, batch_rows.batch_select(dialect, table, COLUMNS)
        )
        session.execute(statement, batch_rows.rows_parameter(rows, COLUMNS))
    inserts = [text for text in statements if text.lstrip().upper().startswith("INSERT")]
    assert len(inserts) == 1
    with transaction(any_store.read) as session:
        found = session.execute(
            select(*(table.c[name] for name in COLUMNS)).order_by(table.c.seq)
        ).all()
    assert [dict(zip(COLUMNS, row, strict=True)) for row in found] == rows
