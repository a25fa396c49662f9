"""Each branch's own answer to a write it sent live, and the lineage's answer a sealed tape serves.

A write is answered by the branch's own sandbox (DESIGN §4). The address's exchange keeps the
first recording — what a fork that never wrote is served — but four siblings that log in each
got their own session id from the world, and a sealed replay of one sibling's lineage must hand
it that sibling's session, not the first recorder's, or its later requests name another
branch's sandbox. So a recorded write also keeps the branch's answer here, and a sealed tape
serves a write the answer of the nearest branch of the asker's lineage (itself, its parent, …)
that wrote at that address. Without this module every lineage would be replayed the one
branch's world whose write happened to land first. Functions take `session=` and never commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, null, select

from store.exchanges import RecordedAnswer, answer_from_row
from store.lineage import lineage_cte
from store.models import Blob, Branch, Exchange, WriteAnswer
from store.prepared import Executor, Prepared
from store.unit import Unit
from store.upsert import insert_for_dialect

_write_answers, _branches = WriteAnswer.__table__, Branch.__table__
_exchanges, _blobs = Exchange.__table__, Blob.__table__

ANSWER_FIELDS = ("response_status", "response_headers", "response_body_sha")


def _keep_statement(dialect: str) -> Any:
    # A retried write keeps the answer the worker was given last.
    insert = insert_for_dialect(dialect, _write_answers).values(
        {name: bindparam(name) for name in ("branch_id", "key_hash", "occurrence", "fingerprint")}
        | {name: bindparam(name) for name in ANSWER_FIELDS}
    )
    return insert.on_conflict_do_update(
        index_elements=["branch_id", "key_hash", "occurrence", "fingerprint"],
        set_={name: insert.excluded[name] for name in ANSWER_FIELDS},
    )


_KEEP = Prepared(_keep_statement)


def keep_write_answer_later(
    branch_id: int,
    key_hash: str,
    occurrence: int,
    fingerprint: str,
    *,
    status: int,
    headers: list[list[str]],
    body_sha: str | None,
    unit: Unit,
) -> None:
    """Keep the branch's stored answer to its write, with the unit's commit (nothing reads it
    back in the record's transaction)."""
    unit.write_later(
        _KEEP,
        {
            "branch_id": branch_id,
            "key_hash": key_hash,
            "occurrence": occurrence,
            "fingerprint": fingerprint,
            "response_status": status,
            "response_headers": headers,
            "response_body_sha": body_sha,
        },
    )


def _lineage_answer_statement(_dialect: str) -> Any:
    lineage = lineage_cte()
    return (
        select(
            _exchanges.c.id,
            _write_answers.c.response_status,
            _write_answers.c.response_headers,
            _write_answers.c.response_body_sha,
            _blobs.c.data,
            null().label("error_kind"),  # a kept answer is always the world's HTTP answer
        )
        .select_from(_write_answers)
        .join(lineage, lineage.c.id == _write_answers.c.branch_id)
        .join(
            _exchanges,
            (_exchanges.c.tape_id == bindparam("tape_id"))
            & (_exchanges.c.key_hash == _write_answers.c.key_hash)
            & (_exchanges.c.occurrence == _write_answers.c.occurrence)
            & (_exchanges.c.fingerprint == _write_answers.c.fingerprint),
        )
        .outerjoin(_blobs, _blobs.c.sha256 == _write_answers.c.response_body_sha)
        .where(
            _write_answers.c.key_hash == bindparam("key_hash"),
            _write_answers.c.occurrence == bindparam("occurrence"),
            _write_answers.c.fingerprint == bindparam("fingerprint"),
        )
        .order_by(lineage.c.depth)
        .limit(1)
    )


_LINEAGE_ANSWER = Prepared(_lineage_answer_statement)


def lineage_write_answer(
    tape_id: int,
    branch_id: int,
    key_hash: str,
    occurrence: int,
    fingerprint: str,
    *,
    session: Executor,
) -> RecordedAnswer | None:
    """The answer the nearest branch of `branch_id`'s lineage (itself first) was given to its
    write at this address, as a `RecordedAnswer` naming the address's exchange; None when no
    branch of the lineage wrote there (the exchange's own answer is then the one to serve)."""
    parameters = {
        "tape_id": tape_id,
        "branch_id": branch_id,
        "key_hash": key_hash,
        "occurrence": occurrence,
        "fingerprint": fingerprint,
    }
    row = _LINEAGE_ANSWER.first(parameters, session=session)
    return None if row is None else answer_from_row(row)


def write_answer_body_hashes(tape_id: int, *, session: Executor) -> set[str]:
    """Every body hash the tape's write answers name (an export copies those blobs too)."""
    query = (
        select(_write_answers.c.response_body_sha)
        .join(_branches, _branches.c.id == _write_answers.c.branch_id)
        .where(_branches.c.tape_id == tape_id, _write_answers.c.response_body_sha.is_not(None))
    )
    return {sha for (sha,) in session.execute(query)}
