"""Single-flight claims and pending records on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from sqlalchemy import select

from store import claims, exchanges
from store.branches import get_branch
from store.db import Store, transaction
from store.models import Event
from store.unit import unit_of_work
from tests.store.test_tapes import make_tape


def test_one_claim_per_address_and_takeover_only_when_expired(store: Store) -> None:
    tape_id = make_tape(store)
    address = (tape_id, "k", 0, "")
    with transaction(store.write) as session:
        assert claims.try_claim(*address, ticket="a", claim_expires=100.0, session=session)
        assert not claims.try_claim(*address, ticket="b", claim_expires=100.0, session=session)
        assert claims.try_claim(
            tape_id, "k", 1, "", ticket="c", claim_expires=100.0, session=session
        )
        claim = claims.get_claim(*address, session=session)
        live = claims.take_over_expired(
            claim.id, old_ticket="a", ticket="b", now=50.0, claim_expires=200.0, session=session
        )
        assert not live
        assert claims.take_over_expired(
            claim.id, old_ticket="a", ticket="b", now=150.0, claim_expires=200.0, session=session
        )
        # A second waiter racing on the same stale view loses.
        assert not claims.take_over_expired(
            claim.id, old_ticket="a", ticket="d", now=150.0, claim_expires=200.0, session=session
        )
        claims.release_claim("b", session=session)
        assert claims.get_claim(*address, session=session) is None


def add_pending_t1(store: Store) -> claims.Pending:
    """Ticket "t1"'s pending record (with its event) on a new tape `t`'s root, as stored."""
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        event_id = exchanges.add_event(
            session=session,
            branch_id=root.id,
            seq=1,
            method="GET",
            url="u",
            key_hash="k",
            occurrence=0,
            fingerprint="",
            decision="recorded",
            is_read=True,
            true_fingerprint_nonempty=False,
            exchange_id=None,
        )
        expected = claims.Pending(
            ticket="t1",
            tape_id=tape_id,
            branch_id=root.id,
            event_id=event_id,
            key_hash="k",
            occurrence=0,
            fingerprint="",
            decision="recorded",
            is_write=False,
            request={"writes": []},
        )
        claims.add_pending(session=session, **asdict(expected), created=0.0)
    return expected


def test_pending_records_pop_once(store: Store) -> None:
    expected = add_pending_t1(store)
    with unit_of_work(store) as unit:  # a record pops on the unit's Core connection
        assert claims.pop_pending("t1", session=unit.connection) == expected
    with transaction(store.write) as session:
        assert claims.pop_pending("t1", session=session) is None
    assert len(claims.new_ticket()) == 32 and claims.new_ticket() != claims.new_ticket()


def test_stale_pending_records_and_their_claims_are_swept(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        for ticket, created in (("old", 10.0), ("new", 500.0)):
            event_id = exchanges.add_event(
                session=session,
                branch_id=root.id,
                seq=1 if ticket == "old" else 2,
                method="GET",
                url="u",
                key_hash=ticket,
                occurrence=0,
                fingerprint="",
                decision="recorded",
                is_read=True,
                true_fingerprint_nonempty=False,
                exchange_id=None,
            )
            claims.add_pending(
                session=session,
                ticket=ticket,
                tape_id=tape_id,
                branch_id=root.id,
                event_id=event_id,
                key_hash=ticket,
                occurrence=0,
                fingerprint="",
                decision="recorded",
                is_write=False,
                request={},
                created=created,
            )
            claims.try_claim(
                tape_id, ticket, 0, "", ticket=ticket, claim_expires=1e12, session=session
            )
    with transaction(store.write) as session:
        assert claims.delete_stale_pending(100.0, session=session) == 1
        assert claims.get_claim(tape_id, "old", 0, "", session=session) is None
        assert claims.get_claim(tape_id, "new", 0, "", session=session) is not None
        assert claims.pop_pending("old", session=session) is None
        assert claims.pop_pending("new", session=session) is not None


def test_a_pending_record_is_added_with_the_event_it_names(store: Store) -> None:
    """One statement with the commit on PostgreSQL, two on SQLite: the same rows either way."""
    tape_id = make_tape(store)
    with transaction(store.read) as session:
        branch_id = get_branch(tape_id, "root", session=session).id
    event = {
        "branch_id": branch_id,
        "method": "GET",
        "url": "u",
        "key_hash": "k",
        "occurrence": 0,
        "fingerprint": "f",
        "decision": "refetched",
        "is_read": True,
        "true_fingerprint_nonempty": True,
        "exchange_id": None,
    }
    fields = {
        "ticket": "t2",
        "tape_id": tape_id,
        "branch_id": branch_id,
        "key_hash": "k",
        "occurrence": 0,
        "fingerprint": "f",
        "decision": "refetched",
        "is_write": False,
        "request": {"writes": []},
        "created": 0.0,
    }
    with pytest.raises(TypeError, match="missing"), unit_of_work(store) as unit:
        claims.add_pending_with_event_later(unit=unit, event=event, ticket="t2")
    with unit_of_work(store) as unit:
        claims.add_pending_with_event_later(unit=unit, event=event, **fields)
    with unit_of_work(store) as unit:
        pending = claims.pop_pending("t2", session=unit.connection)
    with transaction(store.read) as session:
        events = session.execute(
            select(Event.id, Event.seq, Event.decision).where(Event.branch_id == branch_id)
        ).all()
    assert pending is not None and [tuple(row) for row in events] == [
        (pending.event_id, 1, "refetched")
    ]
    del fields["created"]
    assert pending == claims.Pending(event_id=pending.event_id, **fields)
