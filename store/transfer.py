"""Export a tape to a standalone SQLite file and import one back, keeping its digest.

A tape is portable (DESIGN §3): it moves between machines and between SQLite and PostgreSQL as
one file. Copying re-numbers every row id on the way in, so a tape can be imported into a store
that already holds others; the digest ignores ids and names, so it survives the round trip.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import DatabaseError
from sqlalchemy.orm import Session

from store.blob_integrity import BATCH, MISSING, body_hashes, first_damaged_body, stored_blobs
from store.db import make_engine, make_session_factory, transaction
from store.digest_manifest import first_difference, write_manifest
from store.errors import StoreError
from store.models import (
    Blob,
    Branch,
    Event,
    Exchange,
    KeyHint,
    OccurrenceCounter,
    ResourceVersion,
    Tape,
    WriteAnswer,
)
from store.tapes import get_tape
from store.upsert import insert_for

logger = logging.getLogger(__name__)

CHUNK = 2000


class TransferError(StoreError):
    """The file is not a Groundhog tape export, or does not hold exactly one tape."""


class DamagedTape(TransferError):
    """A body's bytes do not hash to the name its exchanges use: the file was changed."""


class EditedTape(DamagedTape):
    """The file's content no longer hashes to the digest it states: it was changed."""


def _chunks(rows: Iterable[dict[str, Any]], size: int = CHUNK) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _columns(model: Any, skip: set[str]) -> list[Any]:
    return [column for column in model.__table__.columns if column.name not in skip]


def _stream(source: Session, model: Any, where: Any, skip: set[str]) -> Iterator[dict[str, Any]]:
    columns = _columns(model, skip)
    query = select(*columns).where(where).execution_options(yield_per=CHUNK)
    for row in source.execute(query):
        yield dict(row._mapping)


def copy_tape(
    source: Session,
    tape: Tape,
    target: Session,
    name: str,
    config: dict[str, Any] | None = None,
    *,
    check_bodies: bool = False,
) -> Tape:
    """Copy `tape` from `source` into `target` as `name` (with `config` instead of its own, if
    given); returns the new tape (not committed). With `check_bodies` (an import) a body whose
    bytes do not match its hash raises `DamagedTape` and the caller's transaction rolls back."""
    copy = Tape(
        name=name,
        world_seed=tape.world_seed,
        mode=tape.mode,
        online=tape.online,
        dependency_model=tape.dependency_model,
        config=tape.config if config is None else config,
    )
    target.add(copy)
    target.flush()
    branch_ids: dict[int, int] = {}
    for branch in source.scalars(
        select(Branch).where(Branch.tape_id == tape.id).order_by(Branch.id)
    ):
        new = Branch(
            tape_id=copy.id,
            path=branch.path,
            parent_path=branch.parent_path,
            fork_point=branch.fork_point,
            event_count=branch.event_count,
            shim_counters=branch.shim_counters,
        )
        target.add(new)
        target.flush()
        branch_ids[branch.id] = new.id
    old_branches = list(branch_ids)
    for model in (OccurrenceCounter, ResourceVersion, WriteAnswer):
        rows = _stream(source, model, model.branch_id.in_(old_branches), set())
        for batch in _chunks(rows):
            for row in batch:
                row["branch_id"] = branch_ids[row["branch_id"]]
            target.execute(insert(model), batch)
    for batch in _chunks(_stream(source, KeyHint, KeyHint.tape_id == tape.id, set())):
        for row in batch:
            row["tape_id"] = copy.id
        target.execute(insert(KeyHint), batch)
    _copy_blobs(source, tape.id, target, check_bodies=check_bodies)
    old_addresses: dict[int, tuple[str, int, str]] = {}
    for batch in _chunks(_stream(source, Exchange, Exchange.tape_id == tape.id, set())):
        for row in batch:
            old_addresses[row.pop("id")] = (row["key_hash"], row["occurrence"], row["fingerprint"])
            row["tape_id"] = copy.id
        target.execute(insert(Exchange), batch)
    new_ids = {
        (key, occurrence, fingerprint): new_id
        for new_id, key, occurrence, fingerprint in target.execute(
            select(Exchange.id, Exchange.key_hash, Exchange.occurrence, Exchange.fingerprint).where(
                Exchange.tape_id == copy.id
            )
        )
    }
    events = _stream(source, Event, Event.branch_id.in_(old_branches), {"id"})
    for batch in _chunks(events):
        for row in batch:
            row["branch_id"] = branch_ids[row["branch_id"]]
            if row["exchange_id"] is not None:
                row["exchange_id"] = new_ids.get(old_addresses.get(row["exchange_id"], ("", 0, "")))
        target.execute(insert(Event), batch)
    return copy


def _copy_blobs(source: Session, tape_id: int, target: Session, *, check_bodies: bool) -> None:
    """Copy the tape's bodies; with `check_bodies`, refuse any whose bytes do not match its name
    (or that is missing), naming the first exchange that uses it."""
    names = body_hashes(tape_id, session=source)
    found: dict[str, str] = dict.fromkeys(names, MISSING)
    statement = insert_for(target, Blob.__table__).on_conflict_do_nothing(index_elements=["sha256"])
    batch: list[dict[str, Any]] = []
    for name, data in stored_blobs(names, session=source):
        found[name] = hashlib.sha256(data).hexdigest() if check_bodies else name
        batch.append({"sha256": name, "data": data})
        if len(batch) >= BATCH:
            target.execute(statement, batch)
            batch = []
    if batch:
        target.execute(statement, batch)
    if check_bodies:
        damaged = first_damaged_body(tape_id, found, session=source)
        if damaged is not None:
            raise DamagedTape(f"{damaged.describe()}; the file was changed after export")


def export_tape(
    tape: Tape, path: Path, *, session: Session, config: dict[str, Any] | None = None
) -> None:
    """Write `tape` into a new standalone SQLite file at `path` (its config replaced by
    `config` if given: the resolver adds which redaction rules applied)."""
    if path.exists():
        path.unlink()
    engine = make_engine(f"sqlite:///{path}")
    try:
        with transaction(make_session_factory(engine)) as target:
            copy = copy_tape(session, tape, target, tape.name, config)
            target.flush()
            # The export states what it holds, so an import can tell what was edited on the way.
            write_manifest(copy.id, session=target)
    finally:
        # Closing the last connection checkpoints the WAL into the file and removes it.
        engine.dispose()


def import_tape(
    path: Path,
    name: str | None,
    *,
    session: Session,
    check: Callable[[Tape, str], None] | None = None,
) -> Tape:
    """Copy the one tape in the SQLite file at `path` into the session's store.

    `check(tape, name)` may refuse the tape (raising) before anything is copied: the resolver
    validates an imported tape exactly as it validates `POST /v1/tapes`.
    """
    engine = make_engine(f"sqlite:///{path}", create_schema=False)
    try:
        with transaction(make_session_factory(engine)) as source:
            try:
                tapes = list(source.scalars(select(Tape)))
            except DatabaseError as error:
                raise TransferError(f"not a Groundhog tape export: {error.orig}") from error
            except ValueError as error:  # a config column that is not JSON
                raise TransferError(f"the tape's config is not JSON: {error}") from error
            if len(tapes) != 1:
                raise TransferError(
                    f"a tape export holds exactly one tape, this holds {len(tapes)}"
                )
            (tape,) = tapes
            target_name = name or tape.name
            if check is not None:
                check(tape, target_name)  # first: a bad name must not be echoed as "exists"
            if get_tape(target_name, session=session) is not None:
                raise FileExistsError(target_name)
            copy = copy_tape(source, tape, session, target_name, check_bodies=True)
            edited = first_difference(tape.id, session=source)
            if edited is not None:
                raise EditedTape(f"{edited}; the file was changed after export")
            return copy
    finally:
        engine.dispose()
