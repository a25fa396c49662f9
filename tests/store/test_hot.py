"""The resolve path's driver-level SQL (store/hot.py) on SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy.exc import IntegrityError

from store import exchanges, hot, repository
from store.db import Store, transaction


def make_tape(store: Store) -> tuple[int, int]:
    with transaction(store.write) as session:
        tape = repository.create_tape(
            session=session,
            name="hot",
            world_seed=3,
            mode="replay",
            online=False,
            dependency_model="path",
            config={"ignore_params": ["ts"]},
        )
        root = repository.get_branch(tape.id, "root", session=session)
        assert root is not None
        return tape.id, root.id


def test_tape_and_branch_reads_typed_fields_in_one_row(store: Store) -> None:
    tape_id, branch_id = make_tape(store)
    with transaction(store.write) as session:
        row = hot.tape_and_branch("hot", "root", session=session)
        assert hot.tape_and_branch("hot", "root/none", session=session) is None
        assert hot.tape_and_branch("other", "root", session=session) is None
    assert row == (tape_id, "hot", 3, "replay", False, "path", {"ignore_params": ["ts"]}, branch_id)
    assert row.online is False and row.branch_id == branch_id


def test_counters_sequences_and_versions_share_the_session_transaction(store: Store) -> None:
    _tape_id, branch_id = make_tape(store)
    with transaction(store.write) as session:
        taken = [hot.take_occurrence(branch_id, "k" * 64, session=session) for _ in range(3)]
        seqs = [hot.take_event_seq(branch_id, session=session) for _ in range(2)]
        repository.set_versions(branch_id, {"host:a": "v1", "host:b": "v2"}, session=session)
        versions = hot.versions_of(branch_id, {"host:a", "host:c"}, session=session)
    assert taken == [0, 1, 2] and seqs == [1, 2] and versions == {"host:a": "v1"}
    with pytest.raises(RuntimeError), transaction(store.write) as session:
        hot.take_occurrence(branch_id, "k" * 64, session=session)
        raise RuntimeError("roll back")
    with transaction(store.write) as session:
        assert hot.take_occurrence(branch_id, "k" * 64, session=session) == 3
        assert repository.get_branch(_tape_id, "root", session=session).event_count == 2


def test_find_answer_joins_the_body_and_misses_cleanly(store: Store) -> None:
    tape_id, _branch_id = make_tape(store)
    with transaction(store.write) as session:
        body_sha = exchanges.put_blob(b"\x00answer", session=session)
        content = exchanges.ExchangeContent(
            key_readable="v1 GET http://a/x",
            request_method="GET",
            request_host="a",
            request_url="http://a/x",
            request_headers=[],
            request_body_sha=exchanges.put_blob(b"", session=session),
            response_status=201,
            response_headers=[["X-Dup", "1"], ["X-Dup", "2"]],
            response_body_sha=body_sha,
        )
        exchanges.insert_exchange_first_wins(tape_id, "k" * 64, 0, "", content, session=session)
    with transaction(store.read) as session:
        found = hot.find_answer(tape_id, "k" * 64, 0, "", session=session)
        assert hot.find_answer(tape_id, "k" * 64, 1, "", session=session) is None
    assert found is not None
    assert (found.status, found.headers, found.body, found.error_kind) == (
        201,
        [["X-Dup", "1"], ["X-Dup", "2"]],
        b"\x00answer",
        None,
    )


def test_driver_errors_surface_as_sqlalchemy_errors(store: Store) -> None:
    """The resolver's handlers catch SQLAlchemy's classes (OperationalError: 503)."""
    _tape_id, branch_id = make_tape(store)
    with pytest.raises(IntegrityError) as raised, transaction(store.write) as session:
        hot.take_occurrence(branch_id + 1000, "k" * 64, session=session)  # no such branch
    assert isinstance(raised.value.orig, store.engine.dialect.loaded_dbapi.IntegrityError)
    with transaction(store.write) as session:  # the failed transaction left nothing behind
        assert hot.take_occurrence(branch_id, "k" * 64, session=session) == 0


def test_driver_transaction_commits_or_rolls_back_whole(store: Store) -> None:
    _tape_id, branch_id = make_tape(store)
    lock = threading.Lock()
    with hot.driver_transaction(store.engine, lock) as driver:
        assert lock.locked()  # in-process writers queue here, as `transaction` makes them
        assert hot.take_occurrence(branch_id, "k" * 64, session=driver) == 0
        assert hot.take_event_seq(branch_id, session=driver) == 1
    assert not lock.locked()
    with pytest.raises(RuntimeError), hot.driver_transaction(store.engine, lock) as driver:
        hot.take_occurrence(branch_id, "k" * 64, session=driver)
        hot.take_event_seq(branch_id, session=driver)
        raise RuntimeError("not a plain hit")
    assert not lock.locked()
    with transaction(store.write) as session:
        assert hot.take_occurrence(branch_id, "k" * 64, session=session) == 1
        assert hot.take_event_seq(branch_id, session=session) == 2
