"""The hot path's tape and branch lookup on SQLite and PostgreSQL, and its relaxed commit."""

from __future__ import annotations

from sqlalchemy import text

from store.db import Store, transaction
from store.refs import find_tape_and_branch
from tests.store.test_tapes import make_tape


def test_a_relaxing_lookup_relaxes_only_its_own_transaction(store: Store) -> None:
    tape_id = make_tape(store)
    postgres = store.engine.dialect.name == "postgresql"
    setting = text("SHOW synchronous_commit")
    with transaction(store.write) as session:
        found = find_tape_and_branch("t", "root", session=session, relax_commit=True)
        assert found is not None and found[0].id == tape_id and found[1].path == "root"
        assert found[0].config == {"rules": []} and found[0].online is True
        if postgres:
            assert session.scalar(setting) == "off"
    with transaction(store.write) as session:
        assert find_tape_and_branch("t", "root", session=session) == found
        if postgres:
            assert session.scalar(setting) == "on"
        assert find_tape_and_branch("t", "x", session=session, relax_commit=True) is None
