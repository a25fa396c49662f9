"""Occurrence counters on SQLite and PostgreSQL: counted per branch and key, from zero."""

from __future__ import annotations

from store.branches import get_branch
from store.counters import take_occurrence
from store.db import Store, transaction
from tests.store.test_tapes import make_tape


def test_occurrences_count_per_branch_and_key(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        taken = [take_occurrence(root.id, "k", session=session) for _ in range(3)]
        other = take_occurrence(root.id, "other", session=session)
    assert taken == [0, 1, 2] and other == 0
