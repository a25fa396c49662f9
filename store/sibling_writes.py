"""What the advisor reads (resolver/advice.py): every write a tape's branches sent live, with
each branch's own answer, and every refetched read with the base recording it was kept from.

A tape's groups answer "could this write have been shared?" only from their own evidence: which
siblings sent the identical request, what each was answered, and whether a later read of the
branch came back different from the recording a branch without the write was served. Two
aggregate queries; the judgement is the resolver's.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from store.models import Branch, Event, Exchange, WriteAnswer

WRITE_DECISIONS = ("write", "replayed-write")
# Enough of a key to hold its version, method, URL and operation, not its body.
KEY_HEAD_CHARS = 2048


@dataclass(frozen=True)
class WriteRow:
    branch: str
    parent: str | None
    seq: int
    method: str
    url: str
    key_hash: str
    occurrence: int
    status: int | None
    body_sha: str | None
    # The head of the recorded key (engine/keys.py): a protocol operation is named in it
    # (` op:mcp tools/call hold`), so the advisor can tell a tool call from the path it shares.
    key_head: str = ""


@dataclass(frozen=True)
class RefetchedRead:
    branch: str
    seq: int
    url: str
    body_sha: str | None
    # The body of the same key and occurrence recorded with an empty fingerprint (what a branch
    # without the write was served), None when no such recording exists.
    base_body_sha: str | None


def sibling_writes(tape_id: int, *, session: Session) -> list[WriteRow]:
    """Every write event of the tape with its branch's own answer (else the address's)."""
    query = (
        select(
            Branch.path,
            Branch.parent_path,
            Event.seq,
            Event.method,
            Event.url,
            Event.key_hash,
            Event.occurrence,
            func.coalesce(WriteAnswer.response_status, Exchange.response_status),
            func.coalesce(WriteAnswer.response_body_sha, Exchange.response_body_sha),
            func.coalesce(func.substr(Exchange.key_readable, 1, KEY_HEAD_CHARS), ""),
        )
        .join(Branch, Branch.id == Event.branch_id)
        .join(
            WriteAnswer,
            and_(
                WriteAnswer.branch_id == Event.branch_id,
                WriteAnswer.key_hash == Event.key_hash,
                WriteAnswer.occurrence == Event.occurrence,
                WriteAnswer.fingerprint == Event.fingerprint,
            ),
            isouter=True,
        )
        .join(Exchange, Exchange.id == Event.exchange_id, isouter=True)
        .where(Branch.tape_id == tape_id, Event.decision.in_(WRITE_DECISIONS))
        .order_by(Branch.path, Event.seq)
    )
    return [WriteRow(*row) for row in session.execute(query)]


def refetched_reads(tape_id: int, *, session: Session) -> list[RefetchedRead]:
    """Every refetched read with its own answer and the base recording of its address."""
    base = aliased(Exchange)
    query = (
        select(
            Branch.path, Event.seq, Event.url, Exchange.response_body_sha, base.response_body_sha
        )
        .join(Branch, Branch.id == Event.branch_id)
        .join(Exchange, Exchange.id == Event.exchange_id, isouter=True)
        .join(
            base,
            and_(
                base.tape_id == tape_id,
                base.key_hash == Event.key_hash,
                base.occurrence == Event.occurrence,
                base.fingerprint == "",
            ),
            isouter=True,
        )
        .where(Branch.tape_id == tape_id, Event.decision == "refetched")
        .order_by(Branch.path, Event.seq)
    )
    return [RefetchedRead(*row) for row in session.execute(query)]
