"""The answers each branch consumed, in order, for the exogenous digest (resolver/signals.py).

A trainer wants to know which rollouts saw the same outside world; that is a fold over the
exogenous answers a branch was served — its reads whose true fingerprint is empty, so the
answer did not depend on the branch's own writes. This streams exactly those rows, ordered by
branch and sequence, so the digest is computed without loading a tape's events at once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from store.models import Branch, Event, Exchange

# Decisions that served an answer nobody recorded as an exchange yet identical for every branch.
UNRECORDED_EXOGENOUS = ("injected",)


@dataclass(frozen=True)
class ConsumedAnswer:
    branch: str
    key_hash: str
    occurrence: int
    decision: str
    status: int | None
    headers: list[list[str]] | None
    body_sha: str | None
    error_kind: str | None


def consumed_answers(
    tape_id: int, *, session: Session, branches: Collection[str] | None = None
) -> Iterator[ConsumedAnswer]:
    """Exogenous answers served on the tape (or those branches), by branch path then seq."""
    query = (
        select(
            Branch.path,
            Event.key_hash,
            Event.occurrence,
            Event.decision,
            Exchange.response_status,
            Exchange.response_headers,
            Exchange.response_body_sha,
            Exchange.error_kind,
        )
        .join(Branch, Branch.id == Event.branch_id)
        .join(Exchange, Exchange.id == Event.exchange_id, isouter=True)
        .where(
            Branch.tape_id == tape_id,
            Event.is_read.is_(True),
            Event.true_fingerprint_nonempty.is_(False),
            Event.exchange_id.is_not(None) | Event.decision.in_(UNRECORDED_EXOGENOUS),
        )
        .order_by(Branch.path, Event.seq)
        .execution_options(yield_per=2000)
    )
    if branches is not None:
        query = query.where(Branch.path.in_(sorted(branches)))
    for row in session.execute(query):
        yield ConsumedAnswer(*row)


@dataclass(frozen=True)
class ForkTally:
    tape_id: int
    parent: str
    decision: str
    is_read: bool
    count: int


def fork_tallies(*, session: Session) -> list[ForkTally]:
    """Decision counts of every forked branch, grouped by (tape, parent): one aggregate query."""
    query = (
        select(Branch.tape_id, Branch.parent_path, Event.decision, Event.is_read, func.count())
        .select_from(Event)
        .join(Branch, Branch.id == Event.branch_id)
        .where(Branch.parent_path.is_not(None))
        .group_by(Branch.tape_id, Branch.parent_path, Event.decision, Event.is_read)
    )
    # Every parent is set (the query keeps forked branches only); the filter says so to mypy.
    rows = session.execute(query)
    return [ForkTally(t, p, d, bool(r), n) for t, p, d, r, n in rows if p is not None]
