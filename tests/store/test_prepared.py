"""The resolve path's prepared Core statements (store/prepared.py) on SQLite and PostgreSQL.

They run on the session's own connection, so they must share its transaction (commit and
rollback), decode typed columns as SQLAlchemy would, and fail with SQLAlchemy's exceptions.
"""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError

from store import claims, exchanges
from store.branches import get_branch
from store.counters import take_event_seq, take_occurrence
from store.db import Store, transaction
from store.models import Claim, Event, Tape
from store.prepared import Prepared
from store.refs import find_tape_and_branch, find_tape_ref
from store.tapes import create_tape, tape_exists
from store.unit import unit_of_work
from store.versions import set_versions, versions_of


def make_tape(store: Store) -> tuple[int, int]:
    with transaction(store.write) as session:
        tape = create_tape(
            session=session,
            name="prep",
            world_seed=3,
            mode="replay",
            online=False,
            dependency_model="path",
            config={"ignore_params": ["ts"]},
        )
        root = get_branch(tape.id, "root", session=session)
        assert root is not None
        return tape.id, root.id


def test_typed_columns_are_decoded_as_sqlalchemy_would(store: Store) -> None:
    tape_id, branch_id = make_tape(store)
    with transaction(store.read) as session:
        found = find_tape_and_branch("prep", "root", session=session)
        assert find_tape_and_branch("prep", "root/none", session=session) is None
        assert find_tape_and_branch("other", "root", session=session) is None
    assert found is not None
    tape, branch = found
    assert (tape.id, tape.name, tape.world_seed, tape.mode, tape.dependency_model) == (
        tape_id,
        "prep",
        3,
        "replay",
        "path",
    )
    assert tape.online is False and tape.config == {"ignore_params": ["ts"]}
    assert (branch.id, branch.path) == (branch_id, "root")


def test_float_columns_are_decoded_on_every_dialect(store: Store) -> None:
    """PostgreSQL's float processor needs the column's type from the driver; it gets it."""
    tape_id, _branch_id = make_tape(store)
    claims_table = Claim.__table__
    lease = Prepared(
        lambda _dialect: select(claims_table.c.claim_expires, claims_table.c.ticket).where(
            claims_table.c.ticket == bindparam("ticket")
        )
    )
    with transaction(store.write) as session:
        assert claims.try_claim(
            tape_id, "k" * 64, 0, "", ticket="t1", claim_expires=12.5, session=session
        )
        assert lease.first({"ticket": "t1"}, session=session) == (12.5, "t1")
        assert lease.first({"ticket": "t2"}, session=session) is None


def test_a_cursor_serves_many_statements_across_transactions(store: Store) -> None:
    tape_id, branch_id = make_tape(store)
    for _ in range(3):
        with unit_of_work(store) as unit:
            assert tape_exists("prep", session=unit.connection)
            assert take_occurrence(branch_id, "k", session=unit.connection) >= 0
            assert find_tape_ref(tape_id, session=unit.session) is not None
            assert not tape_exists("other", session=unit.session)
    with transaction(store.read) as session:
        assert take_occurrence(branch_id, "k", session=session) == 3


def test_writes_share_the_session_transaction(store: Store) -> None:
    tape_id, branch_id = make_tape(store)
    with transaction(store.write) as session:
        taken = [take_occurrence(branch_id, "k" * 64, session=session) for _ in range(3)]
        seqs = [take_event_seq(branch_id, session=session) for _ in range(2)]
        set_versions(branch_id, {"host:a": "v1", "host:b": "v2"}, session=session)
        versions = versions_of(branch_id, {"host:a", "host:c"}, session=session)
    assert taken == [0, 1, 2] and seqs == [1, 2] and versions == {"host:a": "v1"}
    with pytest.raises(RuntimeError), transaction(store.write) as session:
        take_occurrence(branch_id, "k" * 64, session=session)
        raise RuntimeError("roll back")
    with transaction(store.write) as session:
        assert take_occurrence(branch_id, "k" * 64, session=session) == 3
        assert get_branch(tape_id, "root", session=session).event_count == 2


def event_fields(branch_id: int, url: str = "http://a/x") -> dict[str, object]:
    """Every field of a served read's event on `branch_id` (its seq is the branch's next)."""
    return {
        "branch_id": branch_id,
        "method": "GET",
        "url": url,
        "key_hash": "k" * 64,
        "occurrence": 0,
        "fingerprint": "",
        "decision": "shared",
        "is_read": True,
        "true_fingerprint_nonempty": False,
        "exchange_id": None,
    }


def test_the_next_event_takes_the_branch_counter_in_the_same_statement(store: Store) -> None:
    tape_id, branch_id = make_tape(store)
    fields = event_fields(branch_id)
    with transaction(store.write) as session:
        ids = [exchanges.add_next_event(session=session, **fields) for _ in range(3)]
        rows = session.execute(
            select(Event.id, Event.seq, Event.is_read).where(Event.branch_id == branch_id)
        ).all()
        assert get_branch(tape_id, "root", session=session).event_count == 3
    assert sorted(rows) == [(ids[0], 1, True), (ids[1], 2, True), (ids[2], 3, True)]
    with pytest.raises(LookupError), transaction(store.write) as session:
        exchanges.add_next_event(session=session, **{**fields, "branch_id": branch_id + 1000})


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
        exchanges.insert_new_exchange(tape_id, "k" * 64, 0, "", content, session=session)
    with transaction(store.read) as session:
        found = exchanges.find_answer(tape_id, "k" * 64, 0, "", session=session)
        assert exchanges.find_answer(tape_id, "k" * 64, 1, "", session=session) is None
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
        take_occurrence(branch_id + 1000, "k" * 64, session=session)  # no such branch
    assert isinstance(raised.value.orig, store.engine.dialect.loaded_dbapi.IntegrityError)
    with transaction(store.write) as session:  # the failed transaction left nothing behind
        assert take_occurrence(branch_id, "k" * 64, session=session) == 0


def test_a_statement_is_compiled_once_per_dialect(store: Store) -> None:
    built: list[str] = []

    def build(dialect: str) -> object:
        built.append(dialect)
        return select(Tape.__table__.c.name).where(Tape.__table__.c.name == bindparam("name"))

    statement = Prepared(build)  # type: ignore[arg-type]
    make_tape(store)
    for _ in range(2):
        with transaction(store.read) as session:
            assert statement.rows({"name": "prep"}, session=session) == [("prep",)]
            assert statement.first({"name": "none"}, session=session) is None
    assert built == [store.engine.dialect.name]
