"""The opening statements of a resolve, and of a record, fused: one round trip on PostgreSQL.

Before deciding, a resolve must find its tape and branch, take its occurrence and read the
versions of the resources it depends on, and then look its address up. Run apart those are
four round trips to PostgreSQL; this module makes them one statement with data-modifying
WITHs. A record likewise starts by taking its ticket's pending record and reading its tape: one
statement here. SQLite cannot put an upsert or a delete inside a WITH and runs in process, where
a round trip costs nothing to save, so there the same answers come from separate statements.
Without this module every hit on PostgreSQL would pay two more round trips, three when its
answer is not in the resolver's memory, and every record one more
(tests/resolver/test_hit_path.py pins the counts). Every function takes `session=` and never
commits.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, NamedTuple

from sqlalchemy import (
    JSON,
    BindParameter,
    and_,
    bindparam,
    case,
    false,
    func,
    literal,
    null,
    select,
    true,
)
from sqlalchemy.sql import ClauseElement

from engine.refs import BranchRef, TapeRef
from store.claims import Pending, pop_pending, pop_pending_statement
from store.counters import (
    attempt_parameter,
    counted_again,
    take_occurrence,
    take_occurrence_statement,
)
from store.exchanges import RecordedAnswer, answer_columns, answer_from_row
from store.models import Blob, Branch, Exchange, OccurrenceCounter, ResourceVersion, Tape
from store.prepared import Executor, Prepared, dialect_of
from store.refs import (
    REF_COLUMNS,
    RELAX_COMMIT,
    TAPE_AND_BRANCH,
    TAPE_COLUMNS,
    find_tape_ref,
    refs_from_row,
    tape_from_row,
)
from store.upsert import insert_for_dialect
from store.versions import versions_of

# Core statements on the tables (not the mapped classes): no ORM compile step per execution.
_branches, _versions = Branch.__table__, ResourceVersion.__table__
_occurrences = OccurrenceCounter.__table__
_exchanges, _blobs, _tapes = Exchange.__table__, Blob.__table__, Tape.__table__

# The opening statement brings the answer at the ask's guessed address with a body up to this
# size; a larger body is read when the answer is not cached, as before: an answer served from
# memory would otherwise drag its body across on every hit.
ANSWER_BODY_BYTES_READ_AHEAD = 64 * 1024


def _occurrence_and_versions_statement(count: int) -> Prepared:
    """PostgreSQL: the occurrence taken and `count` resources' versions read in one statement.

    The counter's upsert is a data-modifying WITH; the select joins its one row to the branch's
    version rows (none, one row with NULLs), so every row carries the occurrence. The versions
    are read from the statement's snapshot, which the upsert cannot have changed.
    """
    names: list[BindParameter[str]] = [bindparam(f"r{index}") for index in range(count)]

    def build(dialect: str) -> ClauseElement:
        taken = take_occurrence_statement(dialect).cte("taken")
        versions = _versions.c.branch_id == bindparam("branch_id"), _versions.c.resource.in_(names)
        return select(taken.c["count"], _versions.c.resource, _versions.c.version).select_from(
            taken.outerjoin(_versions, and_(*versions))
        )

    return Prepared(build)


_OCCURRENCE_AND_VERSIONS = [_occurrence_and_versions_statement(count) for count in range(1, 65)]


def take_occurrence_and_versions(
    branch_id: int,
    key_hash: str,
    resources: set[str] | frozenset[str],
    *,
    attempt: str | None = None,
    session: Executor,
) -> tuple[int, dict[str, str]]:
    """`take_occurrence` and `versions_of` together: one round trip on PostgreSQL (a write).

    SQLite cannot put an upsert inside a WITH, and runs in process where a round trip costs
    nothing to save, so it runs the two statements.
    """
    if not resources or dialect_of(session).name != "postgresql":
        occurrence = take_occurrence(branch_id, key_hash, attempt=attempt, session=session)
        return occurrence, versions_of(branch_id, resources, session=session)
    ordered = sorted(resources)
    parameters: dict[str, Any] = {f"r{index}": name for index, name in enumerate(ordered)}
    parameters["branch_id"] = branch_id
    parameters["key_hash"] = key_hash
    parameters["attempt"] = attempt
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
    # PostgreSQL, an occurrence taken: the answer at the guessed fingerprint. None: not read
    # (SQLite, or nothing taken).
    read_ahead: ReadAhead | None = None


class ReadAhead(NamedTuple):
    """What the opening statement found at one address: the ask's (tape, key, occurrence) at
    the fingerprint guessed for it (a body over ANSWER_BODY_BYTES_READ_AHEAD left out)."""

    fingerprint: str
    answer: RecordedAnswer | None  # None: nothing is recorded there

    def serves(self, fingerprint: str) -> bool:
        """Whether this is what a look at `fingerprint` would find, whole: the same address,
        and not a failure or a body too large to read ahead (those are read again)."""
        if fingerprint != self.fingerprint:
            return False
        return self.answer is None or self.answer.servable_as_read


def _as_guessed_statement(count: int) -> Prepared:
    """PostgreSQL: tape and branch found, occurrence taken, versions and answer read, in one.

    `found` is the relaxing tape-and-branch lookup; `taken` upserts the counter only from a
    `found` row that matches the guess (same tape id, config text and dependency model), so
    a changed tape takes nothing. The select returns the found row with the occurrence (NULL
    when nothing was taken), the `count` resources' versions as one JSON object, and the answer
    recorded at the taken occurrence and the fingerprint `fingerprint_guess` (which fingerprint
    the address names is known only once the versions are; the caller guesses), so a first
    look at an uncached answer costs no round trip of its own when the guess is right.
    """
    names: list[BindParameter[str]] = [bindparam(f"r{index}") for index in range(count)]

    def build(dialect: str) -> ClauseElement:
        found = TAPE_AND_BRANCH.add_columns(RELAX_COMMIT).cte("found")
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
                ["branch_id", "key_hash", "count", "attempt"],
                select(found.c.branch_id, key_hash, literal(1), attempt_parameter()).where(same),
            )
            .on_conflict_do_update(index_elements=["branch_id", "key_hash"], set_=counted_again())
            .returning(counted)
            .cte("taken")
        )
        versions = (
            select(func.jsonb_object_agg(_versions.c.resource, _versions.c.version, type_=JSON))
            .where(
                _versions.c.branch_id == found.c.branch_id,
                _versions.c.resource.in_(names) if names else false(),  # not an "empty IN"
            )
            .scalar_subquery()
        )
        answers_on = and_(
            _exchanges.c.tape_id == found.c.id,
            _exchanges.c.key_hash == key_hash,
            _exchanges.c.occurrence == taken.c["count"] - 1,
            _exchanges.c.fingerprint == bindparam("fingerprint_guess"),
        )
        small = func.octet_length(_blobs.c.data) <= ANSWER_BODY_BYTES_READ_AHEAD
        body = case((small, _blobs.c.data), else_=null())
        columns = [found.c[column.name] for column in TAPE_AND_BRANCH.selected_columns]
        return select(*columns, taken.c["count"], versions, *answer_columns(body)).select_from(
            found.outerjoin(taken, true())
            .outerjoin(_exchanges, answers_on)
            .outerjoin(_blobs, _blobs.c.sha256 == _exchanges.c.response_body_sha)
        )

    return Prepared(build)


_AS_GUESSED = [_as_guessed_statement(count) for count in range(65)]


def _found_statement(count: int) -> Prepared:
    """SQLite: the tape and branch with `count` resources' versions of the branch (no write)."""
    names: list[BindParameter[str]] = [bindparam(f"r{index}") for index in range(count)]

    def build(_dialect: str) -> ClauseElement:
        versions_on = and_(
            _versions.c.branch_id == _branches.c.id,
            _versions.c.resource.in_(names) if names else false(),  # not an "empty IN"
        )
        return TAPE_AND_BRANCH.add_columns(_versions.c.resource, _versions.c.version).outerjoin(
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
    fingerprint_guess: str = "",
    attempt: str | None = None,
    session: Executor,
) -> TakenAsGuessed | None:
    """Find the tape and branch and, if the tape is still `guess`, take the occurrence of
    `key_hash` and read `resources`' versions (a write); None if the tape or branch is missing.

    The key and resources were worked out from `guess` (the tape as an earlier resolve saw
    it) before anything was read, so on PostgreSQL all of it is one round trip; a tape that
    has changed since (or was made anew under its name) takes nothing, and the caller starts
    over from the tape found. The transaction's commit is relaxed as by `find_tape_and_branch`
    with `relax_commit`. PostgreSQL also reads the answer recorded at the occurrence taken and
    `fingerprint_guess` (`TakenAsGuessed.read_ahead`). SQLite, which cannot upsert inside a
    WITH, takes the occurrence in a second statement, and reads no answer: in process a look
    costs no round trip.
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
        tape, branch = refs_from_row(rows[0], path)
        if not _is_as_guessed(tape, guess):
            return TakenAsGuessed(tape, branch, None, {})
        occurrence = take_occurrence(branch.id, key_hash, attempt=attempt, session=session)
        versions = {
            row[REF_COLUMNS]: row[REF_COLUMNS + 1] for row in rows if row[REF_COLUMNS] is not None
        }
        return TakenAsGuessed(tape, branch, occurrence, versions)
    parameters.update(
        tape_id=guess.id,
        config_text=guess.config_text,
        dependency_model=guess.dependency_model,
        key_hash=key_hash,
        fingerprint_guess=fingerprint_guess,
        attempt=attempt,
    )
    statement = _AS_GUESSED[count] if count < len(_AS_GUESSED) else _as_guessed_statement(count)
    rows = statement.rows(parameters, session=session)
    if not rows:
        return None
    tape, branch = refs_from_row(rows[0], path)
    taken, versions = rows[0][REF_COLUMNS], rows[0][REF_COLUMNS + 1]
    if taken is None:
        return TakenAsGuessed(tape, branch, None, {})
    answer_at = REF_COLUMNS + 2
    answer = None if rows[0][answer_at] is None else answer_from_row(rows[0][answer_at:])
    read_ahead = ReadAhead(fingerprint_guess, answer)
    return TakenAsGuessed(tape, branch, int(taken) - 1, versions or {}, read_ahead)


def _is_as_guessed(tape: TapeRef, guess: TapeRef) -> bool:
    """The fields a draft depends on, compared as `_as_guessed_statement` compares them."""
    return (
        tape.id == guess.id
        and tape.config_text == guess.config_text
        and tape.dependency_model == guess.dependency_model
    )


def _pending_and_tape_statement(_dialect: str) -> ClauseElement:
    """PostgreSQL: the ticket's pending record taken, with its tape's fields, in one statement."""
    popped = pop_pending_statement().cte("popped")
    return select(*popped.c, *TAPE_COLUMNS).select_from(
        popped.outerjoin(_tapes, _tapes.c.id == popped.c.tape_id)
    )


_PENDING_AND_TAPE = Prepared(_pending_and_tape_statement)
_PENDING_FIELD_COUNT = len(fields(Pending))


def pop_pending_and_tape(
    ticket: str, *, session: Executor
) -> tuple[Pending, TapeRef | None] | None:
    """`claims.pop_pending` and `refs.find_tape_ref` of its tape (None: the tape was deleted)
    together, a write: one round trip on PostgreSQL, where every record starts with them. None
    if the ticket has no pending record. SQLite cannot delete inside a WITH, and runs in
    process, so it runs the two statements."""
    if dialect_of(session).name != "postgresql":
        pending = pop_pending(ticket, session=session)
        if pending is None:
            return None
        return pending, find_tape_ref(pending.tape_id, session=session)
    row = _PENDING_AND_TAPE.first({"ticket": ticket}, session=session)
    if row is None:
        return None
    tape_fields = row[_PENDING_FIELD_COUNT:]
    tape = None if tape_fields[0] is None else tape_from_row(tape_fields)
    return Pending(*row[:_PENDING_FIELD_COUNT]), tape
