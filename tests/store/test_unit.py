"""A unit of work: one transaction on a Core connection; its Session joins it, never ends it."""

from __future__ import annotations

import pytest

from store import exchanges
from store.branches import get_branch
from store.counters import take_occurrence
from store.db import Store, transaction
from store.unit import unit_of_work
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
