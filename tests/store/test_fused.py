"""The fused opening statements on SQLite and PostgreSQL: the same answers as taken apart."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import delete, text

from store import exchanges
from store.branches import get_branch
from store.counters import take_occurrence
from store.db import Store, transaction
from store.exchanges import RecordedAnswer, sha256_hex
from store.fused import (
    ANSWER_BODY_BYTES_READ_AHEAD,
    ReadAhead,
    pop_pending_and_tape,
    take_occurrence_and_versions,
    take_occurrence_as_guessed,
)
from store.models import OccurrenceCounter
from store.refs import find_tape_and_branch, find_tape_ref
from store.unit import unit_of_work
from store.versions import set_versions
from tests.store.test_claims import add_pending_t1
from tests.store.test_exchanges import content
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
    assert first[:4] == (guess, root, 0, {"host:a": "v1"})
    assert second[:4] == (guess, root, 1, {})
    # Nothing is recorded at "k": PostgreSQL read no answer, SQLite reads none at all.
    read_nothing = ReadAhead("", None) if store.engine.dialect.name == "postgresql" else None
    assert first.read_ahead == second.read_ahead == read_nothing
    changed = [
        replace(guess, config={}, config_text="{}"),
        replace(guess, id=tape_id + 1000),  # a tape made anew under the same name
        replace(guess, dependency_model="path"),
    ]
    with transaction(store.write) as session:
        for stale in changed:
            taken = take_occurrence_as_guessed("t", "root", stale, "k", wanted, session=session)
            assert taken == (guess, root, None, {}, None)  # the tape found, nothing taken
        for name, path in (("t", "root/none"), ("other", "root")):
            missing = take_occurrence_as_guessed(name, path, guess, "k", wanted, session=session)
            assert missing is None
        assert take_occurrence(root.id, "k", session=session) == 2


def _exchange(store: Store, occurrence: int, fingerprint: str, body: bytes | None) -> int:
    """An exchange of tape `t` at key "k" answering `body` (None: a failure, no body)."""
    with transaction(store.write) as session:
        tape_id = find_tape_and_branch("t", "root", session=session)[0].id
        if body is None:
            failed = {"response_headers": None, "response_body_sha": None, "error_kind": "reset"}
            answer = replace(content(sha256_hex(b"")), response_status=None, **failed)
        else:
            answer = content(exchanges.put_blob(body, session=session))
        exchange_id = exchanges.insert_new_exchange(
            tape_id, "k", occurrence, fingerprint, answer, session=session
        )
    assert exchange_id is not None
    return exchange_id


def test_on_postgresql_the_answer_at_the_occurrence_taken_comes_with_it(store: Store) -> None:
    """The answer at (tape, key, occurrence taken, guessed fingerprint), none at another
    fingerprint or occurrence; a body over the read-ahead size, or a failure, is marked not
    servable as read (the resolve then reads it as before)."""
    make_tape(store)
    large = b"x" * (ANSWER_BODY_BYTES_READ_AHEAD + 1)
    plain = _exchange(store, 0, "", b"small")
    other = _exchange(store, 0, "f:1", large)
    failed = _exchange(store, 0, "f:2", None)
    _exchange(store, 1, "", b"the next occurrence")
    _exchange(store, 0, "f:3", b"another fingerprint")
    read: dict[str, ReadAhead | None] = {}
    with transaction(store.write) as session:
        guess, _root = find_tape_and_branch("t", "root", session=session)
        for fingerprint in ("", "f:1", "f:2", "f:4"):
            session.execute(delete(OccurrenceCounter))  # occurrence 0 each time
            taken = take_occurrence_as_guessed(
                "t", "root", guess, "k", set(), fingerprint_guess=fingerprint, session=session
            )
            assert taken is not None and taken.occurrence == 0
            read[fingerprint] = taken.read_ahead
    if store.engine.dialect.name != "postgresql":
        assert set(read.values()) == {None}
        return
    headers, small = content("").response_headers, sha256_hex(b"small")
    assert read == {
        "": ReadAhead("", RecordedAnswer(plain, 200, headers, small, b"small", None)),
        "f:1": ReadAhead("f:1", RecordedAnswer(other, 200, headers, sha256_hex(large), None, None)),
        "f:2": ReadAhead("f:2", RecordedAnswer(failed, None, [], None, None, "reset")),
        "f:4": ReadAhead("f:4", None),
    }
    servable = {
        name: found.answer.servable_as_read
        for name, found in read.items()
        if found is not None and found.answer is not None
    }
    assert servable == {"": True, "f:1": False, "f:2": False}


def test_a_pending_record_is_taken_with_its_tape_as_apart(store: Store) -> None:
    expected = add_pending_t1(store)
    with unit_of_work(store) as unit:  # a record takes it on the unit's Core connection
        taken = pop_pending_and_tape("t1", session=unit.connection)
        tape = find_tape_ref(expected.tape_id, session=unit.connection)
    assert taken == (expected, tape) and tape is not None and tape.name == "t"
    with unit_of_work(store) as unit:
        assert pop_pending_and_tape("t1", session=unit.connection) is None  # taken once
