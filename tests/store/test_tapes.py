"""Tapes on SQLite and PostgreSQL: created with their root branch, names unique, deleted whole."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from store.branches import fork_branch, get_branch, list_branches
from store.counters import take_occurrence
from store.db import Store, transaction
from store.models import Branch, Event, Exchange
from store.tapes import count_branches, create_tape, delete_tape, get_tape


def make_tape(store: Store, name: str = "t") -> int:
    with transaction(store.write) as session:
        tape = create_tape(
            session=session,
            name=name,
            world_seed=1,
            mode="groundhog",
            online=True,
            dependency_model="closure",
            config={"rules": []},
        )
        return tape.id


def test_create_tape_has_root_branch_and_unique_name(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.read) as session:
        assert [b.path for b in list_branches(tape_id, session=session)] == ["root"]
        assert get_tape("t", session=session).config == {"rules": []}
        assert count_branches(tape_id, session=session) == 1
    with pytest.raises(IntegrityError):
        make_tape(store)


def test_delete_tape_removes_its_rows_only(store: Store) -> None:
    keep = make_tape(store, "keep")
    gone = make_tape(store, "gone")
    with transaction(store.write) as session:
        for tape_id in (keep, gone):
            root = get_branch(tape_id, "root", session=session)
            take_occurrence(root.id, "k", session=session)
            fork_branch(root, "root/x", {}, session=session)
    with transaction(store.write) as session:
        delete_tape(get_tape("gone", session=session), session=session)
    with transaction(store.read) as session:
        assert get_tape("gone", session=session) is None
        branches = session.scalar(select(func.count()).select_from(Branch))
        assert branches == 2
        assert session.scalar(select(func.count()).select_from(Exchange)) == 0
        assert session.scalar(select(func.count()).select_from(Event)) == 0
