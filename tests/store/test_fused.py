"""The fused opening statements on SQLite and PostgreSQL: the same answers as taken apart."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import text

from store.branches import get_branch
from store.counters import take_occurrence
from store.db import Store, transaction
from store.fused import take_occurrence_and_versions, take_occurrence_as_guessed
from store.refs import find_tape_and_branch
from store.versions import set_versions
from tests.store.test_tapes import make_tape


def test_occurrence_and_versions_are_taken_together_as_apart(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        branch_id = get_branch(tape_id, "root", session=session).id
        set_versions(branch_id, {"host:a": "v1", "host:b": "w"}, session=session)
        wanted = {"host:a", "host:b", "host:z"}
        together = [
            take_occurrence_and_versions(branch_id, "k", wanted, session=session),
            take_occurrence_and_versions(branch_id, "k", {"host:z"}, session=session),
            take_occurrence_and_versions(branch_id, "k", set(), session=session),
            take_occurrence_and_versions(branch_id, "j", {"host:b"}, session=session),
        ]
        many = {f"host:{index}" for index in range(70)} | {"host:a"}  # past the kept sizes
        beyond = take_occurrence_and_versions(branch_id, "k", many, session=session)
    assert together == [
        (0, {"host:a": "v1", "host:b": "w"}),
        (1, {}),
        (2, {}),
        (0, {"host:b": "w"}),
    ]
    assert beyond == (3, {"host:a": "v1"})


def test_an_occurrence_is_taken_as_guessed_only_while_the_tape_is_the_guess(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        found = find_tape_and_branch("t", "root", session=session)
        assert found is not None and found[0].config_text is not None
        guess, root = found
        set_versions(root.id, {"host:a": "v1"}, session=session)
        wanted = {"host:a", "host:z"}
        first = take_occurrence_as_guessed("t", "root", guess, "k", wanted, session=session)
        second = take_occurrence_as_guessed("t", "root", guess, "k", set(), session=session)
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
            taken = take_occurrence_as_guessed("t", "root", stale, "k", wanted, session=session)
            assert taken == (guess, root, None, {})  # the tape found, and nothing taken
        for name, path in (("t", "root/none"), ("other", "root")):
            missing = take_occurrence_as_guessed(name, path, guess, "k", wanted, session=session)
            assert missing is None
        assert take_occurrence(root.id, "k", session=session) == 2
