"""Repository functions on SQLite and PostgreSQL: tapes, branches, counters, versions, hints."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from store import repository
from store.db import Store, transaction
from store.models import Branch, Event, Exchange


def make_tape(store: Store, name: str = "t") -> int:
    with transaction(store.write) as session:
        tape = repository.create_tape(
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
        assert [b.path for b in repository.list_branches(tape_id, session=session)] == ["root"]
        assert repository.get_tape("t", session=session).config == {"rules": []}
        assert repository.count_branches(tape_id, session=session) == 1
    with pytest.raises(IntegrityError):
        make_tape(store)


def test_occurrences_count_per_branch_and_key(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = repository.get_branch(tape_id, "root", session=session)
        taken = [repository.take_occurrence(root.id, "k", session=session) for _ in range(3)]
        other = repository.take_occurrence(root.id, "other", session=session)
    assert taken == [0, 1, 2] and other == 0


def test_occurrence_and_versions_are_taken_together_as_apart(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        branch_id = repository.get_branch(tape_id, "root", session=session).id
        repository.set_versions(branch_id, {"host:a": "v1", "host:b": "w"}, session=session)
        wanted = {"host:a", "host:b", "host:z"}
        together = [
            repository.take_occurrence_and_versions(branch_id, "k", wanted, session=session),
            repository.take_occurrence_and_versions(branch_id, "k", {"host:z"}, session=session),
            repository.take_occurrence_and_versions(branch_id, "k", set(), session=session),
            repository.take_occurrence_and_versions(branch_id, "j", {"host:b"}, session=session),
        ]
        many = {f"host:{index}" for index in range(70)} | {"host:a"}  # past the kept sizes
        beyond = repository.take_occurrence_and_versions(branch_id, "k", many, session=session)
    assert together == [
        (0, {"host:a": "v1", "host:b": "w"}),
        (1, {}),
        (2, {}),
        (0, {"host:b": "w"}),
    ]
    assert beyond == (3, {"host:a": "v1"})


def test_a_relaxing_lookup_relaxes_only_its_own_transaction(store: Store) -> None:
    tape_id = make_tape(store)
    postgres = store.engine.dialect.name == "postgresql"
    setting = text("SHOW synchronous_commit")
    with transaction(store.write) as session:
        found = repository.find_tape_and_branch("t", "root", session=session, relax_commit=True)
        assert found is not None and found[0].id == tape_id and found[1].path == "root"
        assert found[0].config == {"rules": []} and found[0].online is True
        if postgres:
            assert session.scalar(setting) == "off"
    with transaction(store.write) as session:
        assert repository.find_tape_and_branch("t", "root", session=session) == found
        if postgres:
            assert session.scalar(setting) == "on"
        assert repository.find_tape_and_branch("t", "x", session=session, relax_commit=True) is None


def test_fork_copies_counters_and_versions(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = repository.get_branch(tape_id, "root", session=session)
        repository.take_occurrence(root.id, "k", session=session)
        repository.set_versions(root.id, {"host:a": "v1"}, session=session)
        repository.take_event_seq(root.id, session=session)
        session.refresh(root)
        child = repository.fork_branch(root, "root/b0", {"random": 2}, session=session)
        assert child.fork_point == 1 and child.parent_path == "root"
        assert repository.take_occurrence(child.id, "k", session=session) == 1
        assert repository.branch_versions(child.id, session=session) == {"host:a": "v1"}
        repository.set_versions(child.id, {"host:a": "v2", "host:b": "w"}, session=session)
        # The parent is unaffected by the child's later state.
        assert repository.branch_versions(root.id, session=session) == {"host:a": "v1"}
        assert repository.take_occurrence(root.id, "k", session=session) == 1
        assert repository.versions_of(child.id, {"host:b", "host:z"}, session=session) == {
            "host:b": "w"
        }
        assert repository.child_paths(tape_id, "root", session=session) == ["root/b0"]


def test_hints_keep_the_first_recording(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        repository.set_hint(tape_id, "k", "doc:1", "", session=session)
        repository.set_hint(tape_id, "k", "doc:2", "", session=session)
        assert repository.get_hint(tape_id, "k", session=session).reads == "doc:1"


def test_delete_tape_removes_its_rows_only(store: Store) -> None:
    keep = make_tape(store, "keep")
    gone = make_tape(store, "gone")
    with transaction(store.write) as session:
        for tape_id in (keep, gone):
            root = repository.get_branch(tape_id, "root", session=session)
            repository.take_occurrence(root.id, "k", session=session)
            repository.fork_branch(root, "root/x", {}, session=session)
    with transaction(store.write) as session:
        repository.delete_tape(repository.get_tape("gone", session=session), session=session)
    with transaction(store.read) as session:
        assert repository.get_tape("gone", session=session) is None
        branches = session.scalar(select(func.count()).select_from(Branch))
        assert branches == 2
        assert session.scalar(select(func.count()).select_from(Exchange)) == 0
        assert session.scalar(select(func.count()).select_from(Event)) == 0


def test_an_occurrence_is_taken_as_guessed_only_while_the_tape_is_the_guess(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        found = repository.find_tape_and_branch("t", "root", session=session)
        assert found is not None and found[0].config_text is not None
        guess, root = found
        repository.set_versions(root.id, {"host:a": "v1"}, session=session)
        wanted = {"host:a", "host:z"}
        first = repository.take_occurrence_as_guessed(
            "t", "root", guess, "k", wanted, session=session
        )
        second = repository.take_occurrence_as_guessed(
            "t", "root", guess, "k", set(), session=session
        )
        if store.engine.dialect.name == "postgresql":
            assert session.scalar(text("SHOW synchronous_commit")) == "off"
    assert first == (guess, root, 0, {"host:a": "v1"})
    assert second == (guess, root, 1, {})
    changed = [
        replace(guess, config={}, config_text="{}"),
        replace(guess, id=tape_id + 1000),  # a tape made anew under the same name
        replace(guess, dependency_model="path"),
    ]
    with transaction(store.write) as session:
        for stale in changed:
            taken = repository.take_occurrence_as_guessed(
                "t", "root", stale, "k", wanted, session=session
            )
            assert taken == (guess, root, None, {})  # the tape found, and nothing taken
        for name, path in (("t", "root/none"), ("other", "root")):
            missing = repository.take_occurrence_as_guessed(
                name, path, guess, "k", wanted, session=session
            )
            assert missing is None
        assert repository.take_occurrence(root.id, "k", session=session) == 2
