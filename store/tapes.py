"""Tapes as the admin API and tools handle them: create (with the root branch), find, list,
count, take offline, delete.

A tape is only usable with its `root` branch, and deleting one must remove every row hanging off
it in an order the foreign keys accept; without this module each route, the importer and the
benchmark would repeat those steps and get them subtly different. Every function takes `session=`
and never commits: the caller owns the transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from store.models import (
    Branch,
    BranchLease,
    Claim,
    Event,
    Exchange,
    KeyHint,
    OccurrenceCounter,
    PendingRecord,
    ResourceVersion,
    SandboxSession,
    Tape,
    WriteAnswer,
)
from store.prepared import Executor, Prepared

ROOT = "root"


def get_tape(name: str, *, session: Session) -> Tape | None:
    return session.scalars(select(Tape).where(Tape.name == name)).one_or_none()


_TAPE_ID = Prepared(
    lambda _dialect: select(Tape.__table__.c.id).where(Tape.__table__.c.name == bindparam("name"))
)


def tape_exists(name: str, *, session: Executor) -> bool:
    return _TAPE_ID.first({"name": name}, session=session) is not None


def list_tapes(*, session: Session) -> list[Tape]:
    return list(session.scalars(select(Tape).order_by(Tape.name)))


def create_tape(
    *,
    session: Session,
    name: str,
    world_seed: int,
    mode: str,
    online: bool,
    dependency_model: str,
    config: dict[str, Any],
) -> Tape:
    """A new tape with its `root` branch."""
    tape = Tape(
        name=name,
        world_seed=world_seed,
        mode=mode,
        online=online,
        dependency_model=dependency_model,
        config=config,
    )
    session.add(tape)
    session.flush()
    session.add(Branch(tape_id=tape.id, path=ROOT, parent_path=None, shim_counters={}))
    session.flush()
    return tape


def set_online(tape: Tape, online: bool, *, session: Session) -> Tape:
    tape.online = online
    session.flush()
    return tape


def delete_tape(tape: Tape, *, session: Session) -> None:
    """Remove a tape and everything hanging off it (blobs are shared and left alone)."""
    branch_ids = select(Branch.id).where(Branch.tape_id == tape.id)
    session.execute(delete(PendingRecord).where(PendingRecord.tape_id == tape.id))
    session.execute(delete(Claim).where(Claim.tape_id == tape.id))
    session.execute(delete(Event).where(Event.branch_id.in_(branch_ids)))
    session.execute(delete(OccurrenceCounter).where(OccurrenceCounter.branch_id.in_(branch_ids)))
    session.execute(delete(ResourceVersion).where(ResourceVersion.branch_id.in_(branch_ids)))
    session.execute(delete(WriteAnswer).where(WriteAnswer.branch_id.in_(branch_ids)))
    session.execute(delete(SandboxSession).where(SandboxSession.branch_id.in_(branch_ids)))
    session.execute(delete(BranchLease).where(BranchLease.branch_id.in_(branch_ids)))
    session.execute(delete(KeyHint).where(KeyHint.tape_id == tape.id))
    session.execute(delete(Exchange).where(Exchange.tape_id == tape.id))
    session.execute(delete(Branch).where(Branch.tape_id == tape.id))
    session.execute(delete(Tape).where(Tape.id == tape.id))


def count_exchanges(tape_id: int, *, session: Session) -> int:
    query = select(func.count()).select_from(Exchange).where(Exchange.tape_id == tape_id)
    return session.scalar(query) or 0


def count_branches(tape_id: int, *, session: Session) -> int:
    query = select(func.count()).select_from(Branch).where(Branch.tape_id == tape_id)
    return session.scalar(query) or 0
