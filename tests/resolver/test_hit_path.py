"""The plain hit through `Resolver.resolve`: one transaction of a few statements, nothing more.

A hit must take one occurrence, write one event and commit, without touching claims, pending
records or the tape's lock; a miss or a refusal decided on the same path counts the ask once.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from engine.asks import Ask
from engine.policy import Action, Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution, Waiting
from resolver import resolve_tx
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.schemas import RecordRequest, ResponseIn
from store.branches import fork_branch, get_branch
from store.db import Store, open_store, transaction
from store.fused import ANSWER_BODY_BYTES_READ_AHEAD
from store.loop_writes import LoopWriter
from store.models import Claim, Event, OccurrenceCounter, PendingRecord, Tape
from store.tapes import create_tape, delete_tape, get_tape, set_online
from tests.support.store_databases import end_connections, named_connections_url, private_schema_url


def create_tape_t(
    session: Session, branches: tuple[str, ...], *, config: dict[str, object]
) -> Tape:
    """Tape `t` (groundhog mode, online, closure) with `branches` forked from its root."""
    tape = create_tape(
        session=session,
        name="t",
        world_seed=1,
        mode="groundhog",
        online=True,
        dependency_model="closure",
        config=config,
    )
    root = get_branch(tape.id, "root", session=session)
    assert root is not None
    for name in branches:
        fork_branch(root, name, {}, session=session)
    return tape


def open_with_tape(url: str) -> Store:
    """The store at `url` holding tape `t` with branches root/a, root/b and root/c."""
    opened = open_store(url)
    with transaction(opened.write) as session:
        create_tape_t(session, ("root/a", "root/b", "root/c"), config={})
    return opened


def ask(path: str, branch: str, query: list[tuple[str, str]] | None = None) -> ResolveRequest:
    return ResolveRequest(
        tape="t",
        branch=branch,
        method="GET",
        scheme="http",
        host="w.example",
        port=80,
        path=path,
        query=query or [],
    )


def record(
    store: Store,
    resolver: Resolver,
    path: str,
    branch: str,
    body: bytes,
    *,
    max_body_bytes: int = 1024,
) -> None:
    forward = resolver.resolve(ask(path, branch))
    assert isinstance(forward, Resolution) and forward.action is Action.FORWARD
    response = ResponseIn(
        status=200, headers=[("X-Dup", "1"), ("X-Dup", "2")], body=base64.b64encode(body).decode()
    )
    Recorder(store, max_body_bytes=max_body_bytes).record(
        RecordRequest(ticket=forward.ticket, response=response)
    )


def branch_rows(store: Store, branch: str) -> tuple[list[tuple[int, str, int]], dict[str, int]]:
    with transaction(store.read) as session:
        tape = get_tape("t", session=session)
        branch_id = get_branch(tape.id, branch, session=session).id
        events = session.execute(
            select(Event.seq, Event.decision, Event.occurrence)
            .where(Event.branch_id == branch_id)
            .order_by(Event.seq)
        ).all()
        counters = session.execute(
            select(OccurrenceCounter.key_hash, OccurrenceCounter.count).where(
                OccurrenceCounter.branch_id == branch_id
            )
        ).all()
    return [tuple(row) for row in events], {key: count for key, count in counters}


# tape and branch with the versions, occurrence, answer, event number, event (BEGIN, COMMIT
# aside), once the resolver knows the tape's config from an earlier resolve.
HIT_STATEMENTS = 5


def statements_of(store: Store) -> list[str]:
    """Every statement SQLite runs from now on, as traced by the driver itself."""
    seen: list[str] = []
    store.engine.dispose()  # fresh connections, each traced from its first statement

    def trace(statement: str) -> None:
        if not statement.startswith(("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")):
            seen.append(" ".join(statement.split()))

    @event.listens_for(store.engine, "connect")
    def _traced(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_connection.set_trace_callback(trace)

    return seen


def test_a_hit_takes_one_occurrence_and_one_event_in_a_few_statements(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    record(store, resolver, "/x", "root/a", b"answer")
    resolver.cache = type(resolver.cache)()  # a cold cache: the answer comes from the store
    seen = statements_of(store)
    served = resolver.resolve(ask("/x", "root/b"))
    assert len(seen) == HIT_STATEMENTS, seen
    assert not [s for s in seen if "gh_claims" in s or "gh_pending" in s]
    assert not [s for s in seen if "FOR SHARE" in s or "FOR UPDATE" in s]
    assert isinstance(served, Resolution) and served.decision is Decision.SHARED
    assert served.response is not None and served.response_json is not None
    assert base64.b64decode(served.response["body"]) == b"answer"
    assert served.response["headers"] == [["X-Dup", "1"], ["X-Dup", "2"]]
    events, counters = branch_rows(store, "root/b")
    assert events == [(1, "shared", 0)] and list(counters.values()) == [1]


def test_on_sqlite_a_miss_looks_its_address_up_once(store: Store) -> None:
    """Its transaction holds the write lock from BEGIN, so nobody can record between the
    lookup and the claim: the look PostgreSQL takes again after a won claim is not taken."""
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    record(store, resolver, "/warm", "root/a", b"warm")  # the tape's config is known
    seen = statements_of(store)
    forward = resolver.resolve(ask("/x", "root/b"))
    assert isinstance(forward, Resolution) and forward.action is Action.FORWARD
    lookups = [s for s in seen if s.startswith("SELECT gh_exchanges.id")]
    assert len(lookups) == 1, seen
    assert [s for s in seen if "INSERT INTO gh_claims" in s], seen


def test_a_miss_falls_back_having_counted_nothing(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    record(store, resolver, "/x", "root/a", b"first")
    # Occurrence 1 of /x was never recorded: the hit path declines, the general path forwards.
    again = resolver.resolve(ask("/x", "root/a"))
    assert isinstance(again, Resolution) and again.decision is Decision.RECORDED
    assert again.ask.occurrence == 1
    events, counters = branch_rows(store, "root/a")
    assert [(seq, decision) for seq, decision, _ in events] == [(1, "recorded"), (2, "recorded")]
    # Not 3: the declined attempt was rolled back; not 2: the forward at occurrence 1 is not
    # answered yet, so it gave its occurrence back (it is taken by its record).
    assert list(counters.values()) == [1]


def test_a_sealed_miss_is_refused_by_the_general_path(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    record(store, resolver, "/x", "root/a", b"first")
    with transaction(store.write) as session:
        set_online(get_tape("t", session=session), False, session=session)
    refused = resolver.resolve(ask("/y", "root/b"))
    shared = resolver.resolve(ask("/x", "root/b"))
    assert isinstance(refused, Resolution) and refused.decision is Decision.REFUSED
    assert isinstance(shared, Resolution) and shared.decision is Decision.SHARED
    events, _ = branch_rows(store, "root/b")
    assert [decision for _, decision, _ in events] == ["refused", "shared"]


@pytest.mark.postgres
def test_a_hit_after_the_server_ended_the_resolvers_connections_is_served(
    postgres_url: str,
) -> None:
    label = f"gh-test-{secrets.token_hex(4)}"
    with private_schema_url(postgres_url) as url:
        store = open_with_tape(named_connections_url(url, label))
        try:
            resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
            record(store, resolver, "/x", "root/a", b"answer")
            first = resolver.resolve(ask("/x", "root/b"))
            assert isinstance(first, Resolution) and first.decision is Decision.SHARED
            assert end_connections(postgres_url, label)  # as a server restart would
            served = resolver.resolve(ask("/x", "root/c"))
            assert isinstance(served, Resolution) and served.decision is Decision.SHARED
            assert served.response is not None
            assert base64.b64decode(served.response["body"]) == b"answer"
            events, counters = branch_rows(store, "root/c")
            assert events == [(1, "shared", 0)] and list(counters.values()) == [1]
        finally:
            store.dispose()


def test_a_tape_made_anew_under_its_name_is_resolved_by_its_own_config(store: Store) -> None:
    """The resolver guesses a tape's config from its last resolve; a wrong guess is noticed."""
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    first = resolver.resolve(ask("/x", "root/a", query=[("ts", "1")]))  # the guess: config {}
    assert isinstance(first, Resolution) and first.ask.occurrence == 0
    with transaction(store.write) as session:
        delete_tape(get_tape("t", session=session), session=session)
        tape = create_tape_t(session, ("root/a",), config={"ignore_params": ["ts"]})
    asks = [resolver.resolve(ask("/x", "root/a", query=[("ts", t)])) for t in ("1", "2")]
    # The new config ignores `ts`: both are one key, the second waits on the first's claim
    # (neither answered yet, so both ask occurrence 0).
    assert isinstance(asks[0], Resolution) and isinstance(asks[1], Waiting)
    assert [a.ask.occurrence for a in asks] == [0, 0]
    assert {a.ask.tape_id for a in asks} == {tape.id}


@contextlib.contextmanager
def sent_to_postgresql(store: Store, messages: tuple[str, ...]) -> Iterator[list[str]]:
    """The protocol messages of `messages`' kinds the store's connections send while this runs.

    libpq's own trace of each checked-out connection: every statement is one "Execute" (or a
    "Query" for psycopg's BEGIN and COMMIT). A round trip ends with a "Sync" (one per
    statement, or one per pipeline) or is a "Query".
    """
    with tempfile.TemporaryFile() as trace:

        def _on_checkout(dbapi_connection, _record, _proxy) -> None:  # type: ignore[no-untyped-def]
            dbapi_connection.pgconn.trace(trace.fileno())

        def _on_checkin(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
            dbapi_connection.pgconn.untrace()

        event.listen(store.engine, "checkout", _on_checkout)
        event.listen(store.engine, "checkin", _on_checkin)
        sent: list[str] = []
        try:
            yield sent
        finally:
            event.remove(store.engine, "checkout", _on_checkout)
            event.remove(store.engine, "checkin", _on_checkin)
        trace.seek(0)
        for line in trace.read().decode(errors="replace").splitlines():
            fields = line.split("\t")
            if len(fields) > 3 and fields[1] == "F" and fields[3] in messages:
                sent.append(line)


@pytest.mark.postgres
@pytest.mark.parametrize("in_memory", [True, False], ids=["answer-in-memory", "answer-on-disk"])
def test_a_hit_on_postgresql_is_three_round_trips(postgres_url: str, in_memory: bool) -> None:
    """BEGIN; the tape found, occurrence taken, versions and answers read; the event with the
    COMMIT. An answer the resolver has not served before comes with the opening statement."""
    with private_schema_url(postgres_url) as url:
        store = open_with_tape(url)
        try:
            resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
            record(store, resolver, "/x", "root/a", b"answer")
            if in_memory:
                resolver.resolve(ask("/x", "root/b"))  # served, so kept in memory
            else:  # a resolver that knows the tape's config, but not the answer
                resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
                resolver.resolve(ask("/warm", "root/b"))
            with sent_to_postgresql(store, ("Query", "Execute", "Sync")) as sent:
                served = resolver.resolve(ask("/x", "root/c"))
            assert isinstance(served, Resolution) and served.decision is Decision.SHARED
            assert base64.b64decode(served.response["body"]) == b"answer"
            kinds = [line.split("\t")[3] for line in sent]
            assert kinds.count("Query") + kinds.count("Execute") == 4, sent  # statements
            assert kinds.count("Query") + kinds.count("Sync") == 3, sent  # round trips
            events, counters = branch_rows(store, "root/c")
            assert events == [(1, "shared", 0)] and list(counters.values()) == [1]
        finally:
            store.dispose()


@pytest.mark.postgres
def test_an_answer_recorded_after_the_opening_statement_is_seen_after_the_claim(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answers the opening statement read are for the first look only: one that another
    resolver records between that statement and the claim (a later statement sees its commit)
    is served, where the answers read ahead would have sent the ask upstream again."""
    with private_schema_url(postgres_url) as url:
        store = open_with_tape(url)
        try:
            resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
            record(store, resolver, "/warm", "root/a", b"warm")  # the config is known: reads ahead
            take_claim = resolver._take_claim

            def record_first(session: Session, asked: Ask, ticket: str) -> bool:
                other = Resolver(store, max_body_bytes=1024, claim_seconds=30)
                record(store, other, "/x", "root/b", b"meanwhile")
                return take_claim(session, asked, ticket)

            monkeypatch.setattr(resolver, "_take_claim", record_first)
            served = resolver.resolve(ask("/x", "root/c"))
            assert isinstance(served, Resolution) and served.action is Action.SERVE, served
            assert served.response is not None
            assert base64.b64decode(served.response["body"]) == b"meanwhile"
            with transaction(store.read) as session:
                assert session.execute(select(Claim.ticket)).all() == []
        finally:
            store.dispose()


@pytest.mark.postgres
def test_on_postgresql_a_body_too_large_to_read_ahead_is_read_when_served(
    postgres_url: str,
) -> None:
    with private_schema_url(postgres_url) as url:
        store = open_with_tape(url)
        try:
            large = secrets.token_bytes(ANSWER_BODY_BYTES_READ_AHEAD + 1)
            recorder = Resolver(store, max_body_bytes=len(large), claim_seconds=30)
            record(store, recorder, "/large", "root/a", large, max_body_bytes=len(large))
            resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
            resolver.resolve(ask("/warm", "root/b"))  # the tape's config is known: reads ahead
            served = resolver.resolve(ask("/large", "root/c"))
            assert isinstance(served, Resolution) and served.decision is Decision.SHARED
            assert served.response is not None
            assert base64.b64decode(served.response["body"]) == large
        finally:
            store.dispose()


@pytest.mark.postgres
def test_on_postgresql_a_read_after_its_own_write_is_not_served_the_unwritten_answer(
    postgres_url: str,
) -> None:
    """The opening statement reads ahead where the address would be had the branch written
    nothing it reads; a branch that did write has another address, and that answer is not its."""
    with private_schema_url(postgres_url) as url:
        store = open_with_tape(url)
        try:
            resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
            record(store, resolver, "/x", "root/b", b"unwritten")
            write = ask("/x", "root/a").model_copy(update={"method": "PUT"})
            forward = resolver.resolve(write)
            assert isinstance(forward, Resolution) and forward.action is Action.FORWARD
            response = ResponseIn(status=200, headers=[], body="")
            Recorder(store, max_body_bytes=1024).record(
                RecordRequest(ticket=forward.ticket, response=response)
            )
            read = resolver.resolve(ask("/x", "root/a"))
            assert isinstance(read, Resolution) and read.ask.fingerprint != ""
            assert read.action is Action.FORWARD, read
        finally:
            store.dispose()


def _round_trips(sent: list[str]) -> int:
    kinds = [line.split("\t")[3] for line in sent]
    return kinds.count("Query") + kinds.count("Sync")


@pytest.mark.postgres
def test_a_miss_and_its_record_on_postgresql_send_unread_writes_with_the_commit(
    postgres_url: str,
) -> None:
    """A forward's request blob and pending record, and a record's claim release, notify and
    event update, ride with the COMMIT: round trips only for what the decision reads."""
    with private_schema_url(postgres_url) as url:
        store = open_with_tape(url)
        try:
            resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
            record(store, resolver, "/warm", "root/a", b"warm")  # the tape's config is known
            with sent_to_postgresql(store, ("Query", "Sync")) as resolving:
                forward = resolver.resolve(ask("/x", "root/b"))
            assert isinstance(forward, Resolution) and forward.action is Action.FORWARD
            response = ResponseIn(status=200, headers=[], body=base64.b64encode(b"x").decode())
            with sent_to_postgresql(store, ("Query", "Sync")) as recording:
                Recorder(store, max_body_bytes=1024).record(
                    RecordRequest(ticket=forward.ticket, response=response)
                )
            # BEGIN; tape, occurrence, versions and answer (none); the claim; the answer
            # again (PostgreSQL: a record may have landed meanwhile); the tape's online flag
            # under a share lock; then the request blob, the event with the pending record
            # that keeps its id (one statement), and the COMMIT together.
            assert _round_trips(resolving) == 6, resolving
            # BEGIN; the pending record taken with its tape; the exchange; then the answer's
            # blob, the claim released, the notify, the event finished and the COMMIT together.
            assert _round_trips(recording) == 4, recording
            served = resolver.resolve(ask("/x", "root/c"))
            assert isinstance(served, Resolution) and served.decision is Decision.SHARED
            with transaction(store.read) as session:
                tape = get_tape("t", session=session)
                pending = session.execute(select(PendingRecord.ticket)).all()
                claims_left = session.execute(select(Claim.ticket)).all()
                finished = session.execute(
                    select(Event.decision, Event.exchange_id).where(
                        Event.branch_id == get_branch(tape.id, "root/b", session=session).id
                    )
                ).all()
            assert pending == [] and claims_left == []
            assert [decision for decision, _ in finished] == ["recorded"]
            assert finished[0][1] is not None
        finally:
            store.dispose()


def on_loop(resolver: Resolver, wire: ResolveRequest) -> Resolution | Waiting | None:
    """The door's loop lane for a resolve (resolver/resolve_tx)."""
    return resolve_tx.on_loop(resolver.loop_writer, partial(resolver.take, wire))


def poll_on_loop(resolver: Resolver, waiting: Waiting) -> Resolution | Waiting | None:
    """The door's loop lane for a wait's look."""
    return resolve_tx.on_loop(resolver.loop_writer, partial(resolver.look, waiting))


def test_on_the_event_loop_a_hit_is_the_same_hit(store: Store) -> None:
    writer = LoopWriter.for_store(store)
    assert writer is not None
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30, loop_writer=writer)
    try:
        record(store, resolver, "/x", "root/a", b"answer")
        taken = on_loop(resolver, ask("/x", "root/b"))
        assert taken is not None and not resolver.needs_thread(taken)
        served = resolver.finish(taken)
    finally:
        writer.close()
    assert isinstance(served, Resolution) and served.decision is Decision.SHARED
    assert served.response is not None and base64.b64decode(served.response["body"]) == b"answer"
    events, counters = branch_rows(store, "root/b")
    assert events == [(1, "shared", 0)] and list(counters.values()) == [1]


def test_a_resolve_that_would_wait_takes_nothing(store: Store) -> None:
    writer = LoopWriter.for_store(store)
    assert writer is not None
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30, loop_writer=writer)
    try:
        record(store, resolver, "/x", "root/a", b"answer")
        assert store.write_lock is not None
        with store.write_lock:  # another writer of this process is mid-transaction
            assert on_loop(resolver, ask("/x", "root/b")) is None
        assert branch_rows(store, "root/b") == ([], {})
        served = resolver.resolve(ask("/x", "root/b"))  # what the route then does, on a thread
    finally:
        writer.close()
    assert isinstance(served, Resolution) and served.ask.occurrence == 0
    assert served.decision is Decision.SHARED


def test_without_a_loop_writer_every_resolve_goes_to_a_thread(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    assert on_loop(resolver, ask("/x", "root/b")) is None
    assert branch_rows(store, "root/b") == ([], {})


def test_a_poll_on_the_event_loop_waits_again_then_serves_what_was_recorded(
    store: Store,
) -> None:
    writer = LoopWriter.for_store(store)
    assert writer is not None
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30, loop_writer=writer)
    try:
        holder = resolver.resolve(ask("/y", "root/a"))
        assert isinstance(holder, Resolution) and holder.action is Action.FORWARD
        waiting = resolver.resolve(ask("/y", "root/b"))  # root/a holds /y's occurrence 0
        assert isinstance(waiting, Waiting)
        before = branch_rows(store, "root/b")

        still = poll_on_loop(resolver, waiting)
        assert isinstance(still, Waiting) and still.claim_expires is not None  # the holder's claim
        assert branch_rows(store, "root/b") == before  # waiting again writes nothing

        Recorder(store, max_body_bytes=1024).record(
            RecordRequest(
                ticket=holder.ticket,
                response=ResponseIn(status=200, headers=[], body=base64.b64encode(b"y").decode()),
            )
        )
        assert store.write_lock is not None
        with store.write_lock:  # another writer of this process is mid-transaction
            assert poll_on_loop(resolver, waiting) is None
        assert branch_rows(store, "root/b") == before  # declined: nothing taken

        taken = poll_on_loop(resolver, waiting)
        assert taken is not None and not resolver.needs_thread(taken)
        served = resolver.finish(taken)
    finally:
        writer.close()
    assert isinstance(served, Resolution) and served.decision is Decision.SHARED
    assert served.response is not None and base64.b64decode(served.response["body"]) == b"y"
    events, _counters = branch_rows(store, "root/b")
    assert events[len(before[0]) :] == [(len(before[0]) + 1, "shared", 0)]


def test_without_a_loop_writer_every_poll_goes_to_a_thread(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    holder = resolver.resolve(ask("/z", "root/a"))
    assert isinstance(holder, Resolution) and holder.action is Action.FORWARD
    waiting = resolver.resolve(ask("/z", "root/b"))
    assert isinstance(waiting, Waiting)
    assert poll_on_loop(resolver, waiting) is None
    assert isinstance(resolver.poll(waiting), Waiting)


def test_a_hit_writes_five_pages_and_a_miss_nine(tmp_path: Path) -> None:
    """A SQLite commit costs about the pages it writes (migration 0003 cut 7 to 5 and 12 to 9):
    counted as WAL frames, which the loop writer never checkpoints."""
    database = tmp_path / "pages.sqlite3"
    store = open_with_tape(f"sqlite:///{database}")
    writer = LoopWriter(store, commits_per_checkpoint=10**9)
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30, loop_writer=writer)
    wal = Path(f"{database}-wal")

    with store.engine.connect() as connection:
        page_size = int(connection.exec_driver_sql("PRAGMA page_size").scalar_one())

    def frames() -> int:  # a WAL file: a 32-byte header, then frames of a 24-byte header + page
        return (wal.stat().st_size - 32) // (24 + page_size)

    try:
        record(store, resolver, "/x", "root/a", b"answer")
        assert on_loop(resolver, ask("/y", "root/a")) is not None  # warm-up
        before = frames()
        miss = on_loop(resolver, ask("/z", "root/a"))
        assert isinstance(miss, Resolution) and miss.action is Action.FORWARD
        after_miss = frames()
        hit = on_loop(resolver, ask("/x", "root/b"))
        assert isinstance(hit, Resolution) and hit.decision is Decision.SHARED
        after_hit = frames()
    finally:
        writer.close()
        store.dispose()
    assert after_miss - before <= 9
    assert after_hit - after_miss <= 5
