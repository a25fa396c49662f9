"""A lease holder's local decision is the resolver's: the same address for a hit, and `None`
wherever the resolver would do anything but serve a plain hit (or needs what the copy lacks)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import get_type_hints

import pytest
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.orm import Session

from bench.lease_scale import STATEMENTS
from engine.cache import Address, Recorded
from engine.draft_memo import DraftMemo
from engine.leased_hits import BranchCopy, local_hit
from engine.policy import Action, Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution
from groundhog.protocol.wire import (
    AheadAnswer,
    LeaseAheadAnswer,
    LeaseBranch,
    LeaseEventsAnswer,
    LeaseGrant,
    LeaseRenewAnswer,
    LeaseTape,
)
from resolver import answers
from resolver import lease_service as resolver_leases
from resolver.lease_service import LeaseSettings, read_ahead, renew, ship, take
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.schemas import (
    LeaseAheadRequest,
    LeaseEventsRequest,
    LeaseRenewRequest,
    LeaseTakeRequest,
    RecordRequest,
    ResponseIn,
)
from store import exchanges
from store.branches import fork_branch, get_branch
from store.db import Store, open_store, transaction
from store.tapes import create_tape


def make_tape(session: Session, name: str, *, model: str = "closure", config=None) -> None:
    tape = create_tape(
        session=session,
        name=name,
        world_seed=1,
        mode="groundhog",
        online=True,
        dependency_model=model,
        config=config or {},
    )
    root = get_branch(tape.id, "root", session=session)
    assert root is not None
    for child in ("root/a", "root/b"):
        fork_branch(root, child, {}, session=session)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'leased.sqlite3'}")
    with transaction(opened.write) as session:
        make_tape(session, "t")
        make_tape(session, "hinted", model="hints")
        make_tape(session, "faulty", config={"faults": [{"kind": "429", "rate": 1.0}]})
        slow = {"kind": "latency", "rate": 1.0, "path": "/slow", "latency_ms": 300}
        make_tape(session, "slow", config={"faults": [slow]})
    yield opened
    opened.dispose()


def wire(tape: str, branch: str, path: str, **fields) -> ResolveRequest:
    """A resolve body; asked as holder `h`, which `copy_of` leases the branch to."""
    fields.setdefault("method", "GET")
    return ResolveRequest(
        tape=tape, branch=branch, scheme="http", host="w.example", port=80, path=path,
        lease_holder="h", **fields,
    )  # fmt: skip


def record(resolver: Resolver, store: Store, ask: ResolveRequest, body: bytes) -> None:
    forward = resolver.resolve(ask)
    assert isinstance(forward, Resolution) and forward.action is Action.FORWARD
    response = ResponseIn(status=200, body=base64.b64encode(body).decode())
    Recorder(store, max_body_bytes=1024).record(
        RecordRequest(ticket=forward.ticket, response=response)
    )


def copy_of(store: Store, tape: str, branch: str) -> BranchCopy:
    grant = take(store, LeaseTakeRequest(tape=tape, branch=branch, holder="h"), LeaseSettings(5))
    return BranchCopy.from_grant(grant)


def finder(store: Store):
    def find(address: Address) -> Recorded | None:
        with transaction(store.read) as session:
            answer = exchanges.find_answer(*address, session=session)
        if answer is None:
            return None
        return Recorded(answer.exchange_id, answers.from_answer(answer), answer.headers)

    return find


def test_a_local_hit_is_the_resolvers_hit_at_the_same_address(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    for body in (b"first", b"second"):
        record(resolver, store, wire("t", "root/a", "/x"), body)
    copy = copy_of(store, "t", "root/b")
    hit = local_hit(copy, wire("t", "root/b", "/x"), b"", finder(store))
    served = resolver.resolve(wire("t", "root/b", "/x"))
    assert hit is not None and isinstance(served, Resolution)
    assert served.decision is Decision.SHARED
    assert (hit.ask.key, hit.ask.occurrence, hit.ask.fingerprint) == (
        served.ask.key,
        served.ask.occurrence,
        served.ask.fingerprint,
    )
    assert hit.recorded.exchange_id == served.exchange_id
    assert hit.recorded.response == served.response
    # Counted in the copy, the next ask is the next occurrence, as at the resolver.
    copy.counts[hit.ask.key.hash] = hit.ask.occurrence + 1
    second = local_hit(copy, wire("t", "root/b", "/x"), b"", finder(store))
    assert second is not None and second.ask.occurrence == 1
    assert base64.b64decode(second.recorded.response["body"]) == b"second"


def test_nothing_recorded_or_a_write_is_the_resolvers_to_decide(store: Store) -> None:
    copy = copy_of(store, "t", "root/b")
    find = finder(store)
    assert local_hit(copy, wire("t", "root/b", "/never"), b"", find) is None
    post = wire("t", "root/b", "/x", method="POST", body=base64.b64encode(b"{}").decode())
    assert local_hit(copy, post, b"{}", find) is None


def test_a_branch_that_wrote_reads_at_its_own_fingerprint(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    record(resolver, store, wire("t", "root/a", "/doc"), b"base")
    post = wire("t", "root/b", "/doc", method="POST")
    record(resolver, store, post, b"written")
    copy = copy_of(store, "t", "root/b")
    assert copy.versions, "the grant carries the branch's versions"
    # root/a's recording is at the unwritten fingerprint: root/b must not be served it.
    assert local_hit(copy, wire("t", "root/b", "/doc"), b"", finder(store)) is None
    refetched = resolver.resolve(wire("t", "root/b", "/doc"))
    assert isinstance(refetched, Resolution) and refetched.decision is Decision.REFETCHED


def test_what_the_copy_cannot_tell_is_left_to_the_resolver(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    for tape in ("hinted", "faulty"):
        copy = copy_of(store, tape, "root/b")
        assert local_hit(copy, wire(tape, "root/b", "/x"), b"", finder(store)) is None
    # A request carrying a secret is keyed by the deployment's key, which the copy lacks.
    record(resolver, store, wire("t", "root/a", "/s", headers=[("Authorization", "Bearer k")]), b"")
    copy = copy_of(store, "t", "root/b")
    secret = wire("t", "root/b", "/s", headers=[("Authorization", "Bearer k")])
    assert local_hit(copy, secret, b"", finder(store)) is None
    assert isinstance(resolver.resolve(secret), Resolution)


def test_a_local_hit_carries_the_latency_fault_the_resolver_would_add(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    for path in ("/slow", "/quick"):
        record(resolver, store, wire("slow", "root/a", path), b"recorded")
    copy = copy_of(store, "slow", "root/b")
    for path, delay_ms in (("/slow", 300), ("/quick", 0)):
        hit = local_hit(copy, wire("slow", "root/b", path), b"", finder(store))
        served = resolver.resolve(wire("slow", "root/b", path))
        assert hit is not None and isinstance(served, Resolution)
        assert served.decision is Decision.SHARED
        assert hit.delay_ms == served.delay_ms == delay_ms


def ahead_of(store: Store, branch: str, held: list[int] | None = None) -> list[AheadAnswer]:
    asked = LeaseAheadRequest(tape="t", branch=branch, held=held or [])
    return read_ahead(store, asked)["ahead"]


def test_a_read_ahead_sends_what_the_branch_may_ask_next(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    for path in ("/x", "/x", "/y"):
        record(resolver, store, wire("t", "root/a", path), path.encode())
    grant = take(store, LeaseTakeRequest(tape="t", branch="root/b", holder="h"), LeaseSettings(5))
    assert "ahead" not in grant  # a take reads nothing ahead: the holder asks when it pays
    ahead = {(e["occurrence"], e["response"]["body"]) for e in ahead_of(store, "root/b")}
    encoded = {path: base64.b64encode(path.encode()).decode() for path in ("/x", "/y")}
    assert ahead == {(0, encoded["/x"]), (1, encoded["/x"]), (0, encoded["/y"])}
    # Once root/b has read /x once, its occurrence 0 is behind it: not read ahead again.
    assert isinstance(resolver.resolve(wire("t", "root/b", "/x")), Resolution)
    again = {(e["occurrence"], e["response"]["body"]) for e in ahead_of(store, "root/b")}
    assert again == {(1, encoded["/x"]), (0, encoded["/y"])}
    copy = copy_of(store, "t", "root/b")
    assert copy.counts == {served_key(resolver, store): 1}


def test_a_read_ahead_leaves_out_what_its_holder_keeps_and_reads_further(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    for path in ("/x", "/y", "/z"):
        record(resolver, store, wire("t", "root/a", path), path.encode())
    ids = sorted(entry["exchange_id"] for entry in ahead_of(store, "root/b"))
    assert len(ids) == 3
    rest = ahead_of(store, "root/b", held=ids[1:])
    assert [entry["exchange_id"] for entry in rest] == ids[:1]


def test_a_grant_holding_counts_back_leaves_the_missing_keys_to_the_resolver(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A branch with more keys than a grant carries: a key the grant sent is served here at its
    next occurrence; a key it held back is the resolver's (read as never asked it would be
    served occurrence 0 again, which the branch has read already)."""
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    for path in ("/x", "/y"):
        record(resolver, store, wire("t", "root/a", path), path.encode())  # occurrence 0
        assert isinstance(resolver.resolve(wire("t", "root/b", path)), Resolution)  # shared
        record(resolver, store, wire("t", "root/b", path), b"again")  # occurrence 1
    monkeypatch.setattr(resolver_leases, "GRANT_COUNTS", 1)
    grant = take(store, LeaseTakeRequest(tape="t", branch="root/a", holder="h"), LeaseSettings(5))
    assert grant["counts_complete"] is False and list(grant["counts"].values()) == [1]
    copy = BranchCopy.from_grant(grant)
    served = {
        path: local_hit(copy, wire("t", "root/a", path), b"", finder(store))
        for path in ("/x", "/y")
    }
    sent = [path for path, hit in served.items() if hit is not None]
    assert len(sent) == 1, served  # the key sent: its occurrence 1, root/b's recording
    hit = served[sent[0]]
    assert hit is not None and hit.ask.occurrence == 1 and hit.ask.key.hash in grant["counts"]
    held_back = next(path for path in served if path not in sent)
    as_if_complete = replace(copy, complete=True)
    lie = local_hit(as_if_complete, wire("t", "root/a", held_back), b"", finder(store))
    assert lie is not None and lie.ask.occurrence == 0  # what a complete reading would serve


def served_key(resolver: Resolver, store: Store) -> str:
    served = resolver.resolve(wire("t", "root/a", "/x"))  # root/a: occurrence 2, a miss
    assert isinstance(served, Resolution)
    return served.ask.key.hash


def test_a_remembered_draft_decides_as_a_new_one_for_each_branch(store: Store) -> None:
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    asked = {"headers": [("x-variant", "2")]}
    record(resolver, store, wire("t", "root/a", "/x", **asked), b"recorded")
    drafts = DraftMemo()
    for branch in ("root/b", "root"):  # drafted for one branch, remembered for the other
        copy = copy_of(store, "t", branch)
        fresh = local_hit(copy, wire("t", branch, "/x", **asked), b"", finder(store))
        remembered = local_hit(copy, wire("t", branch, "/x", **asked), b"", finder(store), drafts)
        assert fresh is not None and remembered == fresh
        assert remembered.ask.branch == branch
    assert len(drafts._drafts) == 1
    # A copy of the tape with another configuration is drafted anew, not served the old draft.
    copy = copy_of(store, "t", "root/b")
    copy.tape = replace(copy.tape, config={"match_headers": ["x-variant"]})
    assert local_hit(copy, wire("t", "root/b", "/x", **asked), b"", finder(store)) is None
    again = local_hit(copy, wire("t", "root/b", "/x", **asked), b"", finder(store), drafts)
    assert again is None  # keyed by its header now: nothing recorded at that key


def test_the_lease_answers_are_the_wire_shapes_key_for_key(store: Store) -> None:
    """What the proxy reads as groundhog/protocol/wire.py's Lease* shapes is what is sent (mypy
    holds the literal dicts to them too; this holds what reaches the wire)."""
    resolver = Resolver(store, max_body_bytes=1024, claim_seconds=30)
    record(resolver, store, wire("t", "root/a", "/x"), b"x")
    settings = LeaseSettings(5)
    grant = take(store, LeaseTakeRequest(tape="t", branch="root/b", holder="h"), settings)
    assert set(grant) == set(get_type_hints(LeaseGrant))
    assert set(grant["tape"]) == set(get_type_hints(LeaseTape))
    assert set(grant["branch"]) == set(get_type_hints(LeaseBranch))
    ahead = read_ahead(store, LeaseAheadRequest(tape="t", branch="root/b"))
    assert set(ahead) == set(get_type_hints(LeaseAheadAnswer))
    assert [set(entry) for entry in ahead["ahead"]] == [set(get_type_hints(AheadAnswer))]
    branch_id, epoch = grant["branch"]["id"], grant["epoch"]
    held = {"holder": "h", "leases": [{"branch_id": branch_id, "epoch": epoch}]}
    renewed = renew(store, LeaseRenewRequest.model_validate(held), settings)
    assert set(renewed) == set(get_type_hints(LeaseRenewAnswer))
    assert renewed["renewed"] == [branch_id]
    body = {"branch_id": branch_id, "holder": "h", "epoch": epoch, "events": [], "release": True}
    shipped = ship(store, LeaseEventsRequest.model_validate(body))
    assert set(shipped) == set(get_type_hints(LeaseEventsAnswer))


def test_a_take_and_a_read_ahead_cost_the_statements_the_lease_bench_counts(store: Store) -> None:
    statements: list[str] = []

    def count(_connection, _cursor, statement, _parameters, _context, _many) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    copy_of(store, "t", "root/a")  # the first take of the tape's store creates its identity
    sqlalchemy_event.listen(store.engine, "before_cursor_execute", count)
    try:
        copy_of(store, "t", "root/b")
    finally:
        sqlalchemy_event.remove(store.engine, "before_cursor_execute", count)
    assert len(statements) == STATEMENTS["take"], statements
    statements.clear()
    sqlalchemy_event.listen(store.engine, "before_cursor_execute", count)
    try:
        ahead_of(store, "root/b")
    finally:
        sqlalchemy_event.remove(store.engine, "before_cursor_execute", count)
    assert len(statements) == STATEMENTS["ahead"], statements
