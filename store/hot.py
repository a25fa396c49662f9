"""Pre-built SQL for the statements every `/v1/resolve` runs.

A hit costs one short transaction; most of its time was SQLAlchemy building and cache-keying
expression objects, not the database. These statements are written once as portable SQL (the
same text runs on SQLite >= 3.35 and PostgreSQL: ON CONFLICT and RETURNING exist in both), with
typed result columns, and only bound at execution. Table and column names come from the models,
so a renamed column fails at import, not silently. They run on the session's connection
(same transaction) to skip the ORM's per-statement machinery.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, bindparam, text
from sqlalchemy.orm import Session

from store.models import Branch, Event, OccurrenceCounter, ResourceVersion, Tape

_TAPE_AND_BRANCH = text(
    f"SELECT t.id, t.name, t.world_seed, t.mode, t.online, t.dependency_model, t.config, "
    f"b.id AS branch_id FROM {Tape.__tablename__} t JOIN {Branch.__tablename__} b "
    "ON b.tape_id = t.id WHERE t.name = :name AND b.path = :path"
).columns(online=Boolean, config=JSON)

_TAKE_OCCURRENCE = text(
    f"INSERT INTO {OccurrenceCounter.__tablename__} (branch_id, key_hash, count) "
    "VALUES (:branch_id, :key_hash, 1) ON CONFLICT (branch_id, key_hash) "
    f"DO UPDATE SET count = {OccurrenceCounter.__tablename__}.count + 1 RETURNING count"
)

_TAKE_EVENT_SEQ = text(
    f"UPDATE {Branch.__tablename__} SET event_count = event_count + 1 "
    "WHERE id = :branch_id RETURNING event_count"
)

_VERSIONS_OF = text(
    f"SELECT resource, version FROM {ResourceVersion.__tablename__} "
    "WHERE branch_id = :branch_id AND resource IN :resources"
).bindparams(bindparam("resources", expanding=True))

_EVENT_COLUMNS = (
    "branch_id", "seq", "method", "url", "key_hash", "occurrence", "fingerprint", "decision",
    "is_read", "true_fingerprint_nonempty", "exchange_id",
)  # fmt: skip
_ADD_EVENT = text(
    f"INSERT INTO {Event.__tablename__} ({', '.join(_EVENT_COLUMNS)}) "
    f"VALUES ({', '.join(':' + name for name in _EVENT_COLUMNS)}) RETURNING id"
)


def tape_and_branch(tape_name: str, path: str, *, session: Session) -> Any | None:
    """A row with the tape's fields and `branch_id`, or None if either is missing."""
    return (
        session.connection()
        .execute(_TAPE_AND_BRANCH, {"name": tape_name, "path": path})
        .one_or_none()
    )


def take_occurrence(branch_id: int, key_hash: str, *, session: Session) -> int:
    row = session.connection().execute(
        _TAKE_OCCURRENCE, {"branch_id": branch_id, "key_hash": key_hash}
    )
    return int(row.scalar_one()) - 1


def take_event_seq(branch_id: int, *, session: Session) -> int:
    return int(session.connection().execute(_TAKE_EVENT_SEQ, {"branch_id": branch_id}).scalar_one())


def versions_of(branch_id: int, resources: set[str], *, session: Session) -> dict[str, str]:
    if not resources:
        return {}
    rows = session.connection().execute(
        _VERSIONS_OF, {"branch_id": branch_id, "resources": sorted(resources)}
    )
    return {resource: version for resource, version in rows}


def add_event(*, session: Session, **fields: Any) -> int:
    missing = set(_EVENT_COLUMNS) - fields.keys()
    if missing:
        raise TypeError(f"add_event is missing {sorted(missing)}")
    return int(session.connection().execute(_ADD_EVENT, fields).scalar_one())
