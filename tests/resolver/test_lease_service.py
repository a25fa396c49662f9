"""`resolver.lease_service`: `settle` (what an admin route does before it reads a tape's state)
and `fence_out` (what a resolve does first on a leased branch)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from engine.policy import Action
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution, Waiting
from resolver.errors import BranchLeased
from resolver.lease_service import LeaseSettings, settle, take
from resolver.resolution import Resolver
from resolver.schemas import LeaseTakeRequest
from store.branches import fork_branch, get_branch
from store.db import Store, open_store, transaction
from store.models import BranchLease
from store.tapes import create_tape


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'settle.sqlite3'}")
    with transaction(opened.write) as session:
        tape = create_tape(
            session=session, name="t", world_seed=1, mode="groundhog", online=True,
            dependency_model="closure", config={},
        )  # fmt: skip
        root = get_branch(tape.id, "root", session=session)
        assert root is not None
        fork_branch(root, "root/a", {}, session=session)
    yield opened
    opened.dispose()


class CountingWrites:
    """`store.write`, counting the write transactions opened through it."""

    def __init__(self, store: Store) -> None:
        self.inner = store.write
        self.kw = store.write.kw  # what store.unit reads to find the writer's engine
        self.opened = 0

    def __call__(self, **options: Any) -> Session:
        self.opened += 1
        return self.inner(**options)


def test_a_tape_with_no_lease_is_settled_without_a_write(store: Store) -> None:
    writes = CountingWrites(store)
    notified: list[bool] = []
    settle(
        dataclasses.replace(store, write=writes),  # type: ignore[arg-type]
        "t",
        grace=5.0,
        notify=lambda: notified.append(True),
    )
    # A write would queue every report and fork behind the store's writers.
    assert writes.opened == 0 and notified == []


def test_a_held_lease_is_asked_back_and_waited_for(store: Store) -> None:
    take(store, LeaseTakeRequest(tape="t", branch="root/a", holder="h"), LeaseSettings(30))
    writes = CountingWrites(store)

    def holder_ships_and_releases() -> None:  # what a holder asked back does
        with transaction(store.write) as session:
            session.execute(update(BranchLease).values(holder=None, revoke=False))

    settle(
        dataclasses.replace(store, write=writes),  # type: ignore[arg-type]
        "t",
        grace=5.0,
        notify=holder_ships_and_releases,
    )
    assert writes.opened == 1  # the ask-back itself
    with transaction(store.read) as session:
        assert [lease.revoke for lease in session.scalars(select(BranchLease))] == [False]


def resolve_on(resolving: Store, branch: str, holder: str | None = None) -> Resolution | Waiting:
    resolver = Resolver(resolving, max_body_bytes=1024, claim_seconds=30)
    wire = ResolveRequest(
        tape="t", branch=branch, method="GET", scheme="http", host="w.example", port=80,
        path="/x", query=[], lease_holder=holder,
    )  # fmt: skip
    return resolver.resolve(wire)


def test_a_resolve_of_an_unleased_branch_makes_no_session(store: Store) -> None:
    """The fence looks only at the branch the opening statement read; a Session (and its close)
    is made only to void a lapsed lease, not for every resolve."""
    writes = CountingWrites(store)
    result = resolve_on(dataclasses.replace(store, write=writes), "root/a")  # type: ignore[arg-type]
    assert isinstance(result, Resolution) and result.action is Action.FORWARD
    assert writes.opened == 0


def test_a_resolve_voids_a_lapsed_lease_of_another_holder(store: Store) -> None:
    take(store, LeaseTakeRequest(tape="t", branch="root/a", holder="h"), LeaseSettings(30))
    with transaction(store.write) as session:
        session.execute(update(BranchLease).values(expires=1.0))  # lapsed long ago
    writes = CountingWrites(store)
    result = resolve_on(dataclasses.replace(store, write=writes), "root/a", holder="other")  # type: ignore[arg-type]
    assert isinstance(result, Resolution) and result.action is Action.FORWARD
    assert writes.opened == 1  # the void's Session
    with transaction(store.read) as session:
        leases = list(session.scalars(select(BranchLease)))
    assert [(lease.holder, lease.expires) for lease in leases] == [(None, 0.0)]


def test_a_resolve_of_a_branch_leased_to_another_is_refused(store: Store) -> None:
    take(store, LeaseTakeRequest(tape="t", branch="root/a", holder="h"), LeaseSettings(30))
    with pytest.raises(BranchLeased, match="leased to proxy 'h'"):
        resolve_on(store, "root/a", holder="other")
    assert isinstance(resolve_on(store, "root/a", holder="h"), Resolution)
