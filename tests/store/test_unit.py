"""A unit of work: one transaction on a Core connection; its Session joins it, never ends it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from store import exchanges
from store.branches import get_branch
from store.counters import take_occurrence
from store.db import Store, open_store, transaction
from store.models import Event
from store.prepared import run_then_commit
from store.unit import unit_of_work
from tests.store.test_prepared import event_fields
from tests.store.test_tapes import make_tape


def _make_tape(store: Store) -> int:
    """A fresh tape's root branch id."""
    tape_id = make_tape(store, "u")
    with transaction(store.read) as session:
        root = get_branch(tape_id, "root", session=session)
        assert root is not None
        return root.id


def test_connection_and_session_writes_commit_together(store: Store) -> None:
    branch_id = _make_tape(store)
    with unit_of_work(store) as unit:
        assert take_occurrence(branch_id, "k", session=unit.connection) == 0
        exchanges.put_blob(b"body", session=unit.session)  # the ORM side, same transaction
        assert take_occurrence(branch_id, "k", session=unit.connection) == 1
    with transaction(store.read) as session:
        assert exchanges.get_blob(exchanges.sha256_hex(b"body"), session=session) == b"body"
        assert take_occurrence(branch_id, "k", session=session) == 2


def test_an_exception_rolls_back_both_sides(store: Store) -> None:
    branch_id = _make_tape(store)
    with pytest.raises(RuntimeError), unit_of_work(store) as unit:
        take_occurrence(branch_id, "k", session=unit.connection)
        exchanges.put_blob(b"lost", session=unit.session)
        raise RuntimeError("abandon")
    with transaction(store.read) as session:
        with pytest.raises(LookupError):
            exchanges.get_blob(exchanges.sha256_hex(b"lost"), session=session)
        assert take_occurrence(branch_id, "k", session=session) == 0


def test_a_core_only_unit_makes_no_session_and_holds_the_write_lock(store: Store) -> None:
    branch_id = _make_tape(store)
    with unit_of_work(store) as unit:
        take_occurrence(branch_id, "k", session=unit.connection)
        assert unit._session is None
        if store.write_lock is not None:
            assert store.write_lock.locked()
    if store.write_lock is not None:
        assert not store.write_lock.locked()


def test_a_session_commit_inside_does_not_end_the_unit(store: Store) -> None:
    branch_id = _make_tape(store)
    with pytest.raises(RuntimeError), unit_of_work(store) as unit:
        take_occurrence(branch_id, "k", session=unit.connection)
        unit.session.commit()  # joined as rollback_only: the outer transaction goes on
        raise RuntimeError("abandon")
    with transaction(store.read) as session:
        assert take_occurrence(branch_id, "k", session=session) == 0


def _events(store: Store, branch_id: int) -> list[tuple[int, str]]:
    with transaction(store.read) as session:
        rows = session.execute(
            select(Event.seq, Event.url).where(Event.branch_id == branch_id).order_by(Event.seq)
        )
        return [(seq, url) for seq, url in rows]


def _event(url: str, branch_id: int) -> dict[str, object]:
    return event_fields(branch_id, url)


def test_a_later_write_commits_with_the_unit_after_its_other_writes(store: Store) -> None:
    branch_id = _make_tape(store)
    with unit_of_work(store) as unit:
        exchanges.add_next_event_later(unit, **_event("/later", branch_id))
        exchanges.add_next_event(session=unit.connection, **_event("/now", branch_id))
        take_occurrence(branch_id, "k", session=unit.connection)
    # PostgreSQL holds the later write back for the commit's round trip; SQLite runs it at once.
    later_first = store.engine.dialect.name != "postgresql"
    expected = ["/later", "/now"] if later_first else ["/now", "/later"]
    assert _events(store, branch_id) == [(1, expected[0]), (2, expected[1])]
    with transaction(store.read) as session:
        assert take_occurrence(branch_id, "k", session=session) == 1


def test_a_later_write_is_rolled_back_with_the_unit(store: Store) -> None:
    branch_id = _make_tape(store)
    with pytest.raises(RuntimeError), unit_of_work(store) as unit:
        exchanges.add_next_event_later(unit, **_event("/lost", branch_id))
        take_occurrence(branch_id, "k", session=unit.connection)
        raise RuntimeError("abandon")
    assert _events(store, branch_id) == []


def test_a_failing_later_write_rolls_the_whole_unit_back(store: Store) -> None:
    branch_id = _make_tape(store)
    bad = {**_event("/bad", branch_id), "decision": None}  # NOT NULL: refused by the store
    with pytest.raises(IntegrityError), unit_of_work(store) as unit:
        take_occurrence(branch_id, "k", session=unit.connection)
        exchanges.add_next_event_later(unit, **bad)
    assert _events(store, branch_id) == []
    with transaction(store.read) as session:
        assert take_occurrence(branch_id, "k", session=session) == 0  # nothing committed
    with unit_of_work(store) as unit:  # the connection went back to the pool usable
        exchanges.add_next_event_later(unit, **_event("/fine", branch_id))
    assert _events(store, branch_id) == [(1, "/fine")]


def test_run_then_commit_is_for_postgresql_only(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        with store.engine.connect() as connection, pytest.raises(ValueError, match="PostgreSQL"):
            run_then_commit(connection, [])
    finally:
        store.dispose()
