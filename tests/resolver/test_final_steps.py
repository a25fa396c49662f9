"""Unit tests of resolver/final_steps.py: what a final step writes and what it answers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select

from engine.asks import Ask
from engine.decision import Plan, Step
from engine.dependencies import Classification
from engine.facts import facts_of, holder_of
from engine.fingerprint import UNKNOWN_PREFIX
from engine.policy import Action, Decision
from engine.request import RequestParts
from engine.resolve_results import Resolution, Waiting
from resolver import final_steps
from resolver.disk import DiskReserve
from resolver.echoes import EchoBook
from resolver.errors import StoreFull
from resolver.final_steps import FinalSteps, pending_request
from resolver.resolve_tx.opening import take_ask
from store.claims import HeldClaim
from store.db import Store, transaction
from store.models import Claim, Event, OccurrenceCounter, PendingRecord
from store.unit import unit_of_work
from store.versions import branch_versions
from tests.engine.test_facts import make_ask
from tests.resolver.test_hit_path import ask as resolve_request

FORWARD = Plan(Step.FORWARD, Action.FORWARD, Decision.RECORDED)
SECRET = (("sk-live-1234", "<redacted:1>"),)


def test_a_pending_request_keeps_what_the_record_needs_of_the_request() -> None:
    parts = RequestParts(
        "POST", "https", "API.Example.com", 443, "/docs/1", (("a", "1"),), (("X-A", "1"),), b"w"
    )
    writes = Classification(True, frozenset(), frozenset({"host:b", "host:a"}))
    kept = pending_request(
        make_ask(request=parts, classification=writes, body_sha="sha", attempt="try-1")
    )
    assert kept == {
        "key_readable": "v1 GET https://h/x",
        "method": "POST",
        "host": "api.example.com",
        "url": "https://api.example.com/docs/1?a=1",
        "headers": [["X-A", "1"]],
        "body_sha": "sha",
        "writes": ["host:a", "host:b"],  # sorted: the same record for the same request
        "before": {},
        "attempt": "try-1",
        "in_session": False,
    }
    in_session = make_ask(request=parts, classification=writes, session_hash="h")
    assert pending_request(in_session)["in_session"] is True


def forward(store: Store, steps: FinalSteps, path: str) -> tuple[Ask, Resolution | Waiting]:
    """Take an ask for `path` on root/a and carry out a forward for it, in one unit."""
    with unit_of_work(store) as unit:
        wire = resolve_request(path, "root/a")
        ask = take_ask(unit.connection, wire, b"", redaction_key=b"k" * 32).ask
        ask = replace(ask, secrets=SECRET)
        result = steps.carry_out(unit, ask, FORWARD, facts_of(ask), None, None, None, taken=True)
    return ask, result


def steps_of(reserve: DiskReserve | None = None) -> FinalSteps:
    return FinalSteps(
        claim_seconds=30.0, echoes=EchoBook(), reserve=reserve, redaction_key=b"k" * 32
    )


def test_a_forward_writes_its_event_and_pending_record_and_hands_out_a_ticket(
    store: Store,
) -> None:
    steps = steps_of()
    ask, result = forward(store, steps, "/f")
    assert isinstance(result, Resolution)
    assert (result.action, result.decision) == (Action.FORWARD, Decision.RECORDED)
    assert result.ticket is not None and steps.echoes.peek(result.ticket) == SECRET
    with transaction(store.read) as session:
        pending = session.get(PendingRecord, result.ticket)
        event = session.scalars(select(Event).where(Event.branch_id == ask.branch_id)).one()
    assert pending is not None and pending.request == pending_request(ask)
    assert (pending.event_id, pending.decision) == (event.id, "recorded")
    assert event.decision == "recorded" and event.exchange_id is None


def test_a_forward_short_of_the_disk_reserve_is_refused_before_it_writes(
    store: Store, tmp_path: Path
) -> None:
    reserve = DiskReserve(f"sqlite:///{tmp_path / 'steps.sqlite3'}", 2**62)
    steps = steps_of(reserve=reserve)
    with pytest.raises(StoreFull):
        forward(store, steps, "/f")
    with transaction(store.read) as session:  # the ask is not taken: not even its occurrence
        assert session.scalars(select(PendingRecord)).all() == []
        assert session.scalars(select(Event)).all() == []
        assert session.scalars(select(OccurrenceCounter)).all() == []


def test_every_so_many_forwards_sweep_the_stale_pending_records(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = steps_of()
    _ask, first = forward(store, steps, "/old")
    assert isinstance(first, Resolution) and first.ticket is not None
    with transaction(store.write) as session:  # its proxy never came back
        stale = session.get(PendingRecord, first.ticket)
        assert stale is not None
        stale.created = 0.0
    monkeypatch.setattr(final_steps, "STALE_SWEEP_EVERY", 3)
    forward(store, steps, "/new")  # the second forward: no sweep yet
    with transaction(store.read) as session:
        assert session.get(PendingRecord, first.ticket) is not None
    forward(store, steps, "/newer")  # the third sweeps
    with transaction(store.read) as session:
        assert session.get(PendingRecord, first.ticket) is None
        assert len(session.scalars(select(PendingRecord)).all()) == 2


def test_a_wait_writes_nothing_and_carries_the_holders_lease(store: Store) -> None:
    ask = make_ask()
    wait = Plan(Step.WAIT, Action.WAIT, Decision.RECORDED)
    holder = HeldClaim(1, "ticket-of-the-holder", 12.5)
    with unit_of_work(store) as unit:
        result = steps_of().carry_out(
            unit, ask, wait, facts_of(ask), None, None, holder, taken=False
        )
    assert result == Waiting(ask, Decision.RECORDED, 12.5, holder_of(holder))
    with transaction(store.read) as session:
        assert session.scalars(select(Event)).all() == []
        assert session.scalars(select(Claim)).all() == []
        assert session.scalars(select(OccurrenceCounter)).all() == []


def test_a_read_sent_live_gives_its_occurrence_back_until_its_answer_takes_it(
    store: Store,
) -> None:
    """Occurrences are taken by answers: the forward's transaction counts the ask and gives
    it back, so a retry after a lost answer asks the same occurrence."""
    _ask, result = forward(store, steps_of(), "/f")
    assert isinstance(result, Resolution) and result.action is Action.FORWARD
    with transaction(store.read) as session:
        assert [c.count for c in session.scalars(select(OccurrenceCounter))] == [0]
    _again, retried = forward(store, steps_of(), "/f")
    assert isinstance(retried, Resolution) and retried.ask.occurrence == 0


def test_a_write_sent_live_keeps_its_occurrence_and_leaves_its_intent(store: Store) -> None:
    """A write's answer comes from its own live call: its occurrence stands, and before it
    goes live what it may touch is unknown in its branch (write-ahead)."""
    with unit_of_work(store) as unit:
        wire = resolve_request("/w", "root/a").model_copy(update={"method": "POST"})
        ask = take_ask(unit.connection, wire, b"", redaction_key=b"k" * 32).ask
        write = Plan(Step.FORWARD, Action.FORWARD, Decision.WRITE)
        steps_of().carry_out(unit, ask, write, facts_of(ask), None, None, None, taken=True)
    with transaction(store.read) as session:
        assert [c.count for c in session.scalars(select(OccurrenceCounter))] == [1]
        marked = branch_versions(ask.branch_id, session=session)
    assert set(marked) == set(ask.classification.writes) and ask.classification.writes
    assert all(version.startswith(UNKNOWN_PREFIX) for version in marked.values())
