"""store/branch_leases.py on SQLite and PostgreSQL: one holder at a time, epochs fence a stale
holder's events out, a lease asked back is not renewed, and events move the branch on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.orm import Session

from store import branch_leases
from store.branches import fork_branch, get_branch
from store.db import Store, transaction
from store.models import Branch
from store.tapes import create_tape
from tests.support.store_databases import store_of_kind


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with store_of_kind(request, tmp_path / "leases.sqlite3") as opened:
        yield opened


def new_tape(store: Store, name: str, children: int = 0) -> list[int]:
    """A tape's root branch id, then its `children`'s."""
    with transaction(store.write) as session:
        tape = create_tape(
            session=session,
            name=name,
            world_seed=1,
            mode="groundhog",
            online=True,
            dependency_model="closure",
            config={},
        )
        root = get_branch(tape.id, "root", session=session)
        assert root is not None
        forked = [fork_branch(root, f"root/{n}", {}, session=session) for n in range(children)]
        return [root.id, *(child.id for child in forked)]


@pytest.fixture
def branch_id(any_store: Store) -> int:
    return new_tape(any_store, "t")[0]


def grant(store: Store, branch_id: int, holder: str, now: float):
    with transaction(store.write) as session:
        return branch_leases.grant(branch_id, holder, now=now, lease_seconds=5, session=session)


def event(key: str, occurrence: int, serial: int | None = None) -> dict:
    """A served hit as a holder ships it (its serial: its occurrence + 1 unless given)."""
    return {
        "serial": occurrence + 1 if serial is None else serial,
        "method": "GET",
        "url": f"http://w/{key}",
        "key_hash": key,
        "occurrence": occurrence,
        "fingerprint": "",
        "decision": "shared",
        "is_read": True,
        "true_fingerprint_nonempty": False,
        "exchange_id": None,
    }


def test_one_holder_at_a_time_and_each_new_holder_a_new_epoch(
    any_store: Store, branch_id: int
) -> None:
    first = grant(any_store, branch_id, "p", now=100.0)
    assert isinstance(first, branch_leases.Granted) and first.expires == 105.0
    again = grant(any_store, branch_id, "p", now=101.0)
    assert isinstance(again, branch_leases.Granted) and again.epoch == first.epoch
    refused = grant(any_store, branch_id, "q", now=102.0)
    assert isinstance(refused, branch_leases.Refused) and refused.expires == 106.0
    # Refused, q asked p back: p's renewal hears it and is not extended.
    with transaction(any_store.write) as session:
        renewed, revoked, lost = branch_leases.renew(
            "p", [(branch_id, first.epoch)], now=103.0, lease_seconds=5, session=session
        )
    assert (renewed, revoked, lost) == ([], [branch_id], [])
    taken = grant(any_store, branch_id, "q", now=107.0)  # p's lease expired
    assert isinstance(taken, branch_leases.Granted) and taken.epoch == first.epoch + 1


def test_a_stale_holders_events_are_refused_and_a_holders_move_the_branch_on(
    any_store: Store, branch_id: int
) -> None:
    p = grant(any_store, branch_id, "p", now=100.0)
    assert isinstance(p, branch_leases.Granted)
    with transaction(any_store.write) as session:
        applied = branch_leases.apply_events(
            branch_id, "p", p.epoch, [event("k", 0), event("k", 1)], session=session
        )
    assert applied
    with transaction(any_store.read) as session:
        counts, complete, _versions = branch_leases.branch_state(
            branch_id, max_counts=10, session=session
        )
        assert get_branch_events(session, branch_id) == 2
    assert counts == {"k": 2} and complete
    with transaction(any_store.write) as session:
        branch_leases.void_expired(branch_id, "p", session=session)  # someone moved it on
    q = grant(any_store, branch_id, "q", now=200.0)
    assert isinstance(q, branch_leases.Granted)
    with transaction(any_store.write) as session:
        late = branch_leases.apply_events(branch_id, "p", p.epoch, [event("k", 2)], session=session)
    assert not late
    with transaction(any_store.read) as session:
        state = branch_leases.branch_state(branch_id, max_counts=10, session=session)
        assert state[0] == {"k": 2}


def test_asking_back_names_the_latest_expiry_and_release_ends_the_lease(
    any_store: Store, branch_id: int
) -> None:
    p = grant(any_store, branch_id, "p", now=100.0)
    assert isinstance(p, branch_leases.Granted)
    with transaction(any_store.write) as session:
        assert branch_leases.ask_back([branch_id], now=101.0, grace=2, session=session) == 107.0
        # Lapsed (105) but within the grace: its holder may be back and ship.
        assert branch_leases.any_held([branch_id], now=106.0, grace=2, session=session)
        assert not branch_leases.any_held([branch_id], now=108.0, grace=2, session=session)
        assert branch_leases.release(branch_id, "p", p.epoch, session=session)
        assert not branch_leases.any_held([branch_id], now=101.0, grace=2, session=session)
        assert branch_leases.ask_back([branch_id], now=101.0, grace=2, session=session) == 0.0
        assert not branch_leases.release(branch_id, "p", p.epoch, session=session)


def test_held_on_tape_asks_by_name_what_any_held_asks_by_ids(any_store: Store) -> None:
    _, child = new_tape(any_store, "leased", children=1)
    new_tape(any_store, "unleased")
    assert isinstance(grant(any_store, child, "p", now=100.0), branch_leases.Granted)

    def held(tape: str, branch: str | None, now: float) -> bool:
        with transaction(any_store.read) as session:
            return branch_leases.any_held_on_tape(tape, branch, now=now, grace=2, session=session)

    assert held("leased", None, now=101.0) and held("leased", "root/0", now=101.0)
    assert not held("leased", "root", now=101.0)  # the root has no lease of its own
    assert held("leased", None, now=106.0)  # lapsed at 105, within the grace
    assert not held("leased", None, now=108.0)
    assert not held("unleased", None, now=101.0) and not held("missing", None, now=101.0)


def test_a_lease_lapsed_past_the_grace_is_ended_and_its_holder_refused(
    any_store: Store, branch_id: int
) -> None:
    p = grant(any_store, branch_id, "p", now=100.0)
    assert isinstance(p, branch_leases.Granted)
    with transaction(any_store.write) as session:
        branch_leases.void_lapsed([branch_id], before=104.0, session=session)  # still running
        assert branch_leases.any_held([branch_id], now=104.0, grace=0, session=session)
        branch_leases.void_lapsed([branch_id], before=106.0, session=session)
        assert not branch_leases.any_held([branch_id], now=104.0, grace=0, session=session)
        assert not branch_leases.apply_events(branch_id, "p", p.epoch, [], session=session)


def get_branch_events(session: Session, branch_id: int) -> int:
    branch = session.get(Branch, branch_id)
    assert branch is not None
    return branch.event_count


def test_a_batch_of_events_costs_the_same_statements_whatever_its_size(
    any_store: Store, branch_id: int
) -> None:
    p = grant(any_store, branch_id, "p", now=100.0)
    assert isinstance(p, branch_leases.Granted)
    statements: list[str] = []

    def count(_connection, _cursor, statement, _parameters, _context, _many) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    sizes = {}
    sqlalchemy_event.listen(any_store.engine, "before_cursor_execute", count)
    try:
        for size, start in ((5, 0), (50, 5)):
            statements.clear()
            batch = [event(f"k{n % 7}", start + n) for n in range(size)]
            with transaction(any_store.write) as session:
                assert branch_leases.apply_events(branch_id, "p", p.epoch, batch, session=session)
            sizes[size] = len(statements)
    finally:
        sqlalchemy_event.remove(any_store.engine, "before_cursor_execute", count)
    assert sizes[50] == sizes[5] <= 6, sizes
    with transaction(any_store.read) as session:
        assert get_branch_events(session, branch_id) == 55


def test_a_batch_shipped_again_counts_once_and_a_retaking_holder_goes_on_from_it(
    any_store: Store, branch_id: int
) -> None:
    p = grant(any_store, branch_id, "p", now=100.0)
    assert isinstance(p, branch_leases.Granted) and p.shipped == 0
    batch = [event("k", 0), event("k", 1)]
    for _ in range(2):  # the first answer was lost: the holder ships the batch again
        with transaction(any_store.write) as session:
            assert branch_leases.apply_events(
                branch_id, "p", p.epoch, [dict(e) for e in batch], session=session
            )
    with transaction(any_store.read) as session:
        assert get_branch_events(session, branch_id) == 2
    again = grant(any_store, branch_id, "p", now=101.0)  # a restarted p takes its own lease
    assert isinstance(again, branch_leases.Granted)
    assert (again.epoch, again.shipped) == (p.epoch, 2)
    with transaction(any_store.write) as session:
        branch_leases.release(branch_id, "p", p.epoch, session=session)
    anew = grant(any_store, branch_id, "p", now=102.0)
    assert isinstance(anew, branch_leases.Granted)
    assert (anew.epoch, anew.shipped) == (p.epoch + 1, 0)  # a new epoch numbers from 1


def test_a_restarted_holder_ends_the_leases_it_does_not_list_and_no_one_elses(
    any_store: Store, branch_id: int
) -> None:
    (other_branch,) = new_tape(any_store, "t2")
    kept = grant(any_store, branch_id, "restarted", now=100.0)
    dropped = grant(any_store, other_branch, "restarted", now=100.0)
    assert isinstance(kept, branch_leases.Granted) and isinstance(dropped, branch_leases.Granted)
    with transaction(any_store.write) as session:
        renewed, _, lost = branch_leases.renew(
            "restarted",
            [(branch_id, kept.epoch)],
            now=101.0,
            lease_seconds=5,
            release_unlisted=True,
            session=session,
        )
    assert renewed == [branch_id] and lost == []
    # The unlisted lease ended: another holder takes it at once, unexpired as it was.
    assert isinstance(grant(any_store, other_branch, "next", now=102.0), branch_leases.Granted)
    assert isinstance(grant(any_store, branch_id, "next", now=102.0), branch_leases.Refused)
    with transaction(any_store.write) as session:
        branch_leases.renew(
            "restarted", [], now=103.0, lease_seconds=5, release_unlisted=True, session=session
        )
    assert isinstance(grant(any_store, other_branch, "third", now=104.0), branch_leases.Refused)


def test_renewing_many_leases_costs_two_statements(any_store: Store) -> None:
    branch_ids = new_tape(any_store, "many", children=20)
    epochs = {}
    for branch in branch_ids:
        granted = grant(any_store, branch, "h", now=100.0)
        assert isinstance(granted, branch_leases.Granted)
        epochs[branch] = granted.epoch
    held = [*epochs.items(), (10**9, 1)]  # and one the store never had: lost
    statements: list[str] = []

    def count(_connection, _cursor, statement, _parameters, _context, _many) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    sqlalchemy_event.listen(any_store.engine, "before_cursor_execute", count)
    try:
        with transaction(any_store.write) as session:
            renewed, revoked, lost = branch_leases.renew(
                "h", held, now=101.0, lease_seconds=5, session=session
            )
    finally:
        sqlalchemy_event.remove(any_store.engine, "before_cursor_execute", count)
    assert (renewed, revoked, lost) == (branch_ids, [], [10**9])
    work = [s for s in statements if s.split()[0].upper() in ("SELECT", "UPDATE")]
    assert len(work) == 2, statements
    # Extended: another holder is refused until the new expiry (106), not the first (105).
    assert isinstance(grant(any_store, branch_ids[0], "other", now=105.5), branch_leases.Refused)
