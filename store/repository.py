"""Repository functions for tapes, branches and the branch state the resolver's hot path needs.

Every function takes `session=` and never commits: the caller owns the transaction, so one
resolve is one short transaction and an acknowledged record is committed exactly once. Without
this layer the routes would speak SQL directly and the SQLite/PostgreSQL differences would leak.

The statements every resolve runs (tape and branch, occurrence, event number, versions) are
SQLAlchemy Core constructs compiled once per dialect and run on the session's connection
(store/prepared.py explains why); the rest go through `session.execute`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import (
    Insert,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    false,
    func,
    literal,
    select,
    true,
    update,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql import ClauseElement

from store.models import (
    Branch,
    Claim,
    Event,
    Exchange,
    KeyHint,
    OccurrenceCounter,
    PendingRecord,
    ResourceVersion,
    Tape,
)
from store.prepared import Executor, Prepared, dialect_of
from store.upsert import insert_for, insert_for_dialect

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


def get_branch(tape_id: int, path: str, *, session: Session) -> Branch | None:
    query = select(Branch).where(Branch.tape_id == tape_id, Branch.path == path)
    return session.scalars(query).one_or_none()


@dataclass(frozen=True)
class TapeRef:
    """The tape fields the resolve hot path reads, without ORM identity-map overhead."""

    id: int
    name: str
    world_seed: int
    mode: str
    online: bool
    dependency_model: str
    config: dict[str, Any]
    # The config as the database holds it (JSON text), to tell later whether it changed.
    config_text: str | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class BranchRef:
    id: int
    path: str


# Core statements on the tables (not the mapped classes): no ORM compile step per execution.
_tapes, _branches, _versions = Tape.__table__, Branch.__table__, ResourceVersion.__table__
_occurrences = OccurrenceCounter.__table__
_TAPE_COLUMNS = (
    _tapes.c.id,
    _tapes.c.name,
    _tapes.c.world_seed,
    _tapes.c.mode,
    _tapes.c.online,
    _tapes.c.dependency_model,
    _tapes.c.config,
    cast(_tapes.c.config, Text).label("config_text"),
)
_TAPE_AND_BRANCH = (
    select(*_TAPE_COLUMNS, _branches.c.id.label("branch_id"))
    .join(_branches, _branches.c.tape_id == _tapes.c.id)
    .where(_tapes.c.name == bindparam("name"), _branches.c.path == bindparam("path"))
)
_RELAX_COMMIT = func.set_config("synchronous_commit", "off", True)


def _tape_and_branch(row: tuple[Any, ...], path: str) -> tuple[TapeRef, BranchRef]:
    """The refs from a row that starts with `_TAPE_COLUMNS` and the branch's id."""
    tape_id, name, world_seed, mode, online, dependency_model, config, text, branch_id = row[:9]
    tape = TapeRef(
        tape_id, name, world_seed, mode, bool(online), dependency_model, config or {}, text
    )
    return tape, BranchRef(branch_id, path)


_FIND_TAPE_AND_BRANCH = Prepared(lambda _dialect: _TAPE_AND_BRANCH)


def _relaxing_statement(dialect: str) -> ClauseElement:
    """The lookup that also relaxes the transaction's commit, on PostgreSQL in the same trip.

    `set_config(…, true)` is `SET LOCAL` as a function, so it can ride in the select list of a
    statement the resolve runs anyway instead of costing a round trip of its own; it runs once
    per row, and there is exactly one row when the tape and branch exist (when they do not,
    the resolve ends in a 404 and commits nothing).
    """
    if dialect != "postgresql":
        return _TAPE_AND_BRANCH
    return _TAPE_AND_BRANCH.add_columns(_RELAX_COMMIT)


_FIND_TAPE_AND_BRANCH_RELAXED = Prepared(_relaxing_statement)


def find_tape_and_branch(
    name: str, path: str, *, session: Executor, relax_commit: bool = False
) -> tuple[TapeRef, BranchRef] | None:
    """The tape's fields and the branch's id in one statement, or None if either is missing.

    `relax_commit` also makes this transaction's commit return before its WAL reaches the
    disk on PostgreSQL, as `store.db.relax_commit_durability` does (which says when that is
    allowed), without a statement of its own.
    """
    statement = _FIND_TAPE_AND_BRANCH_RELAXED if relax_commit else _FIND_TAPE_AND_BRANCH
    row = statement.first({"name": name, "path": path}, session=session)
    return None if row is None else _tape_and_branch(row, path)


_TAPE_BY_ID = Prepared(
    lambda _dialect: select(*_TAPE_COLUMNS[:-1]).where(_tapes.c.id == bindparam("tape_id"))
)


def find_tape_ref(tape_id: int, *, session: Executor) -> TapeRef | None:
    """The tape's fields by id without loading the mapped object (every record reads them)."""
    row = _TAPE_BY_ID.first({"tape_id": tape_id}, session=session)
    if row is None:
        return None
    tape_id, name, world_seed, mode, online, dependency_model, config = row
    return TapeRef(tape_id, name, world_seed, mode, bool(online), dependency_model, config or {})


def list_branches(tape_id: int, *, session: Session) -> list[Branch]:
    return list(
        session.scalars(select(Branch).where(Branch.tape_id == tape_id).order_by(Branch.path))
    )


def child_paths(tape_id: int, path: str, *, session: Session) -> list[str]:
    query = select(Branch.path).where(Branch.tape_id == tape_id, Branch.parent_path == path)
    return sorted(session.scalars(query))


def fork_branch(
    parent: Branch, child_path: str, shim_counters: dict[str, Any], *, session: Session
) -> Branch:
    """A child at the parent's current state: its counters and versions are copied."""
    child = Branch(
        tape_id=parent.tape_id,
        path=child_path,
        parent_path=parent.path,
        fork_point=parent.event_count,
        event_count=0,
        shim_counters=shim_counters,
    )
    session.add(child)
    session.flush()
    _copy_branch_rows(
        OccurrenceCounter, ("key_hash", "count"), parent.id, child.id, session=session
    )
    _copy_branch_rows(
        ResourceVersion, ("resource", "version"), parent.id, child.id, session=session
    )
    return child


def _copy_branch_rows(
    model: type[OccurrenceCounter] | type[ResourceVersion],
    columns: tuple[str, ...],
    parent_id: int,
    child_id: int,
    *,
    session: Session,
) -> None:
    """Copy one branch's rows of ``model`` to another in a single INSERT … SELECT."""
    table = model.__table__
    rows = select(literal(child_id), *(table.c[name] for name in columns)).where(
        table.c.branch_id == parent_id
    )
    session.execute(table.insert().from_select(["branch_id", *columns], rows))


def _take_occurrence_statement(dialect: str) -> Insert:
    table = OccurrenceCounter.__table__
    statement = insert_for_dialect(dialect, table).values(
        branch_id=bindparam("branch_id"), key_hash=bindparam("key_hash"), count=1
    )
    return statement.on_conflict_do_update(
        index_elements=["branch_id", "key_hash"], set_={"count": table.c["count"] + 1}
    ).returning(table.c["count"])


_TAKE_OCCURRENCE = Prepared(_take_occurrence_statement)


def take_occurrence(branch_id: int, key_hash: str, *, session: Executor) -> int:
    """This ask's occurrence (asks of the key before it), counting it atomically: a write."""
    row = _TAKE_OCCURRENCE.first({"branch_id": branch_id, "key_hash": key_hash}, session=session)
    assert row is not None
    return int(row[0]) - 1


_TAKE_EVENT_SEQ = Prepared(
    lambda _dialect: (
        update(_branches)
        .where(_branches.c.id == bindparam("branch_id"))
        .values(event_count=_branches.c.event_count + 1)
        .returning(_branches.c.event_count)
    )
)


def take_event_seq(branch_id: int, *, session: Executor) -> int:
    """The branch's next event number, taken atomically: a write."""
    row = _TAKE_EVENT_SEQ.first({"branch_id": branch_id}, session=session)
    if row is None:
        raise LookupError(f"branch {branch_id} does not exist")
    return int(row[0])


def branch_versions(branch_id: int, *, session: Session) -> dict[str, str]:
    query = select(ResourceVersion.resource, ResourceVersion.version).where(
        ResourceVersion.branch_id == branch_id
    )
    return {resource: version for resource, version in session.execute(query)}


def _versions_of_statement(count: int) -> Prepared:
    """The lookup of `count` resources (a resolve names a handful; sizes up to 64 are kept)."""
    names = [bindparam(f"r{index}") for index in range(count)]
    return Prepared(
        lambda _dialect: select(_versions.c.resource, _versions.c.version).where(
            _versions.c.branch_id == bindparam("branch_id"), _versions.c.resource.in_(names)
        )
    )


_VERSIONS_OF = [_versions_of_statement(count) for count in range(65)]


def versions_of(
    branch_id: int, resources: set[str] | frozenset[str], *, session: Executor
) -> dict[str, str]:
    """The branch's versions of those of `resources` its lineage wrote."""
    if not resources:
        return {}
    ordered = sorted(resources)
    parameters: dict[str, Any] = {f"r{index}": name for index, name in enumerate(ordered)}
    parameters["branch_id"] = branch_id
    count = len(ordered)
    statement = _VERSIONS_OF[count] if count < len(_VERSIONS_OF) else _versions_of_statement(count)
    return dict(statement.rows(parameters, session=session))


def _occurrence_and_versions_statement(count: int) -> Prepared:
    """PostgreSQL: the occurrence taken and `count` resources' versions read in one statement.

    The counter's upsert is a data-modifying WITH; the select joins its one row to the branch's
    version rows (none, one row with NULLs), so every row carries the occurrence. The versions
    are read from the statement's snapshot, which the upsert cannot have changed.
    """
    names = [bindparam(f"r{index}") for index in range(count)]

    def build(dialect: str) -> ClauseElement:
        taken = _take_occurrence_statement(dialect).cte("taken")
        versions = _versions.c.branch_id == bindparam("branch_id"), _versions.c.resource.in_(names)
        return select(taken.c["count"], _versions.c.resource, _versions.c.version).select_from(
            taken.outerjoin(_versions, and_(*versions))
        )

    return Prepared(build)


_OCCURRENCE_AND_VERSIONS = [_occurrence_and_versions_statement(count) for count in range(1, 65)]


def take_occurrence_and_versions(
    branch_id: int, key_hash: str, resources: set[str] | frozenset[str], *, session: Executor
) -> tuple[int, dict[str, str]]:
    """`take_occurrence` and `versions_of` together: one round trip on PostgreSQL (a write).

    SQLite cannot put an upsert inside a WITH, and runs in process where a round trip costs
    nothing to save, so it runs the two statements.
    """
    if not resources or dialect_of(session).name != "postgresql":
        occurrence = take_occurrence(branch_id, key_hash, session=session)
        return occurrence, versions_of(branch_id, resources, session=session)
    ordered = sorted(resources)
    parameters: dict[str, Any] = {f"r{index}": name for index, name in enumerate(ordered)}
    parameters["branch_id"] = branch_id
    parameters["key_hash"] = key_hash
    count = len(ordered)
    statement = (
        _OCCURRENCE_AND_VERSIONS[count - 1]
        if count <= len(_OCCURRENCE_AND_VERSIONS)
        else _occurrence_and_versions_statement(count)
    )
    rows = statement.rows(parameters, session=session)
    return int(rows[0][0]) - 1, {row[1]: row[2] for row in rows if row[1] is not None}


class TakenAsGuessed(NamedTuple):
    """What `take_occurrence_as_guessed` found, and took when the tape was as guessed."""

    tape: TapeRef
    branch: BranchRef
    occurrence: int | None  # None: the tape is not the guessed one, and nothing was taken
    versions: dict[str, str]


def _as_guessed_statement(count: int) -> Prepared:
    """PostgreSQL: tape and branch found, occurrence taken and versions read, in one statement.

    `found` is the relaxing tape-and-branch lookup; `taken` upserts the counter only from a
    `found` row that matches the guess (same tape id, config text and dependency model), so
    a changed tape takes nothing; the select returns the found row with the occurrence (NULL
    when nothing was taken) joined to the `count` resources' versions.
    """
    names = [bindparam(f"r{index}") for index in range(count)]

    def build(dialect: str) -> ClauseElement:
        found = _TAPE_AND_BRANCH.add_columns(_RELAX_COMMIT).cte("found")
        same = and_(
            found.c.id == bindparam("tape_id"),
            found.c.config_text == bindparam("config_text"),
            found.c.dependency_model == bindparam("dependency_model"),
        )
        key_hash = bindparam("key_hash", type_=_occurrences.c.key_hash.type)
        counted = _occurrences.c["count"]
        taken = (
            insert_for_dialect(dialect, _occurrences)
            .from_select(
                ["branch_id", "key_hash", "count"],
                select(found.c.branch_id, key_hash, literal(1)).where(same),
            )
            .on_conflict_do_update(
                index_elements=["branch_id", "key_hash"], set_={"count": counted + 1}
            )
            .returning(counted)
            .cte("taken")
        )
        versions_on = and_(
            taken.c["count"].is_not(None),
            _versions.c.branch_id == found.c.branch_id,
            _versions.c.resource.in_(names) if names else false(),  # not an "empty IN"
        )
        columns = [found.c[column.name] for column in _TAPE_AND_BRANCH.selected_columns]
        return select(
            *columns, taken.c["count"], _versions.c.resource, _versions.c.version
        ).select_from(found.outerjoin(taken, true()).outerjoin(_versions, versions_on))

    return Prepared(build)


_AS_GUESSED = [_as_guessed_statement(count) for count in range(65)]


def _found_statement(count: int) -> Prepared:
    """SQLite: the tape and branch with `count` resources' versions of the branch (no write)."""
    names = [bindparam(f"r{index}") for index in range(count)]

    def build(_dialect: str) -> ClauseElement:
        versions_on = and_(
            _versions.c.branch_id == _branches.c.id,
            _versions.c.resource.in_(names) if names else false(),  # not an "empty IN"
        )
        return _TAPE_AND_BRANCH.add_columns(_versions.c.resource, _versions.c.version).outerjoin(
            _versions, versions_on
        )

    return Prepared(build)


_FOUND = [_found_statement(count) for count in range(65)]


def take_occurrence_as_guessed(
    name: str,
    path: str,
    guess: TapeRef,
    key_hash: str,
    resources: set[str] | frozenset[str],
    *,
    session: Executor,
) -> TakenAsGuessed | None:
    """Find the tape and branch and, if the tape is still `guess`, take the occurrence of
    `key_hash` and read `resources`' versions (a write); None if the tape or branch is missing.

    The key and resources were worked out from `guess` (the tape as an earlier resolve saw
    it) before anything was read, so on PostgreSQL all of it is one round trip; a tape that
    has changed since (or was made anew under its name) takes nothing, and the caller starts
    over from the tape found. The transaction's commit is relaxed as by `find_tape_and_branch`
    with `relax_commit`. SQLite, which cannot upsert inside a WITH, takes the occurrence in a
    second statement.
    """
    ordered = sorted(resources)
    parameters: dict[str, Any] = {f"r{index}": value for index, value in enumerate(ordered)}
    parameters.update(name=name, path=path)
    count = len(ordered)
    if dialect_of(session).name != "postgresql":
        # The lookup reads the versions too; SQLite's write lock (BEGIN IMMEDIATE) keeps them
        # as they are until the occurrence is taken.
        statement = _FOUND[count] if count < len(_FOUND) else _found_statement(count)
        rows = statement.rows(parameters, session=session)
        if not rows:
            return None
        tape, branch = _tape_and_branch(rows[0], path)
        if not _is_as_guessed(tape, guess):
            return TakenAsGuessed(tape, branch, None, {})
        occurrence = take_occurrence(branch.id, key_hash, session=session)
        versions = {row[9]: row[10] for row in rows if row[9] is not None}
        return TakenAsGuessed(tape, branch, occurrence, versions)
    parameters.update(
        tape_id=guess.id,
        config_text=guess.config_text,
        dependency_model=guess.dependency_model,
        key_hash=key_hash,
    )
    statement = _AS_GUESSED[count] if count < len(_AS_GUESSED) else _as_guessed_statement(count)
    rows = statement.rows(parameters, session=session)
    if not rows:
        return None
    tape, branch = _tape_and_branch(rows[0], path)
    taken = rows[0][9]
    if taken is None:
        return TakenAsGuessed(tape, branch, None, {})
    versions = {row[10]: row[11] for row in rows if row[10] is not None}
    return TakenAsGuessed(tape, branch, int(taken) - 1, versions)


def _is_as_guessed(tape: TapeRef, guess: TapeRef) -> bool:
    """The fields a draft depends on, compared as `_as_guessed_statement` compares them."""
    return (
        tape.id == guess.id
        and tape.config_text == guess.config_text
        and tape.dependency_model == guess.dependency_model
    )


def set_versions(branch_id: int, versions: dict[str, str], *, session: Session) -> None:
    for resource, version in sorted(versions.items()):
        statement = insert_for(session, ResourceVersion.__table__).values(
            branch_id=branch_id, resource=resource, version=version
        )
        statement = statement.on_conflict_do_update(
            index_elements=["branch_id", "resource"], set_={"version": version}
        )
        session.execute(statement)


def get_hint(tape_id: int, key_hash: str, *, session: Session) -> KeyHint | None:
    return session.get(KeyHint, (tape_id, key_hash))


class Hint(NamedTuple):
    """A key's hint as the resolve path reads it (the columns of `KeyHint`, no ORM object)."""

    reads: str | None
    writes: str


_hints = KeyHint.__table__
_FIND_HINT = Prepared(
    lambda _dialect: select(_hints.c.reads, _hints.c.writes).where(
        _hints.c.tape_id == bindparam("tape_id"), _hints.c.key_hash == bindparam("key_hash")
    )
)


def find_hint(tape_id: int, key_hash: str, *, session: Executor) -> Hint | None:
    row = _FIND_HINT.first({"tape_id": tape_id, "key_hash": key_hash}, session=session)
    return None if row is None else Hint(row[0], row[1] or "")


def set_hint(
    tape_id: int, key_hash: str, reads: str | None, writes: str, *, session: Session
) -> None:
    statement = insert_for(session, KeyHint.__table__).values(
        tape_id=tape_id, key_hash=key_hash, reads=reads, writes=writes
    )
    statement = statement.on_conflict_do_nothing(index_elements=["tape_id", "key_hash"])
    session.execute(statement)
