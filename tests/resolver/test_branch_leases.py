"""`resolver.branch_leases.settle`: what an admin route does before it reads a tape's state."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from resolver.branch_leases import LeaseSettings, settle, take
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
