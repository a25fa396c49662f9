"""Occurrence counters on SQLite and PostgreSQL: counted per branch and key, from zero, and
counted once for an attempt retried."""

from __future__ import annotations

from store.branches import get_branch
from store.counters import advance_occurrence, give_back_occurrence_later, take_occurrence
from store.db import Store, transaction
from store.fused import take_occurrence_and_versions, take_occurrence_as_guessed
from store.refs import find_tape_and_branch
from store.unit import unit_of_work
from tests.store.test_tapes import make_tape


def test_occurrences_count_per_branch_and_key(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        taken = [take_occurrence(root.id, "k", session=session) for _ in range(3)]
        other = take_occurrence(root.id, "other", session=session)
    assert taken == [0, 1, 2] and other == 0


def test_the_retry_of_the_attempt_that_counted_last_gets_its_occurrence_again(
    store: Store,
) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        first = take_occurrence(root.id, "k", attempt="a1", session=session)
        retried = [take_occurrence(root.id, "k", attempt="a1", session=session) for _ in range(2)]
        other = take_occurrence(root.id, "k", attempt="a2", session=session)
        # Only the last attempt is remembered: a1's retry after a2 counted is a new ask.
        late = take_occurrence(root.id, "k", attempt="a1", session=session)
        without = [take_occurrence(root.id, "k", session=session) for _ in range(2)]
    assert (first, retried, other, late, without) == (0, [0, 0], 1, 2, [3, 4])


def test_an_occurrence_given_back_forgets_its_attempt(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.read) as session:
        branch_id = get_branch(tape_id, "root", session=session).id
    with unit_of_work(store) as unit:
        taken = take_occurrence(branch_id, "k", attempt="a1", session=unit.connection)
        give_back_occurrence_later(branch_id, "k", unit=unit)
    with transaction(store.write) as session:
        # The ask left without an answer; its retry asks the same occurrence, counted afresh.
        again = take_occurrence(branch_id, "k", attempt="a1", session=session)
        next_one = take_occurrence(branch_id, "k", attempt="a3", session=session)
    assert (taken, again, next_one) == (0, 0, 1)


def test_the_fused_statements_honour_the_attempt(store: Store) -> None:
    make_tape(store)
    with transaction(store.write) as session:
        found = find_tape_and_branch("t", "root", session=session)
        assert found is not None
        tape, root = found
        fused = [
            take_occurrence_and_versions(root.id, "k", {"host:a"}, attempt="f", session=session)
            for _ in range(2)
        ]
        guessed = [
            take_occurrence_as_guessed(
                tape.name, "root", tape, "k", {"host:a"}, attempt="g", session=session
            )
            for _ in range(2)
        ]
    assert [occurrence for occurrence, _ in fused] == [0, 0]
    assert [taken.occurrence for taken in guessed if taken is not None] == [1, 1]


def test_an_answer_that_moves_the_counter_on_names_its_attempt(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        # A read sent live gave its occurrence back; its record answers it at 0.
        advance_occurrence(root.id, "k", 0, attempt="live", session=session)
        # A late waiter's serve at 0 does not move it on, so it names nothing.
        advance_occurrence(root.id, "k", 0, attempt="late", session=session)
        late = take_occurrence(root.id, "k", attempt="late", session=session)
    with transaction(store.write) as session:
        advance_occurrence(root.id, "j", 0, attempt="live", session=session)
        # The live read's answer never reached the worker: its retry asks occurrence 0 again.
        retried = take_occurrence(root.id, "j", attempt="live", session=session)
    assert (late, retried) == (1, 0)
