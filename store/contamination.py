"""The rows the `possibly contaminated` check reads: live writes, and the reads recorded after.

A world that keeps global state (one tool server for every sibling) lets one branch's live write
change what a sibling's recording holds, and the resolver's fingerprints cannot see it: they
only know a branch's own lineage. Flagging such recordings needs every live write of a tape and
the read recordings made after the first of them; interpreting them is
`resolver/contamination.py`. Like every repository function these take `session=` and never
commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from store.models import Branch, Event


@dataclass(frozen=True)
class Asked:
    id: int  # the event id: the tape-wide order in which asks were answered
    branch: str
    seq: int
    method: str
    url: str
    exchange_id: int | None


def _asks(tape_id: int) -> Select[*tuple[Any, ...]]:
    return (
        select(Event.id, Branch.path, Event.seq, Event.method, Event.url, Event.exchange_id)
        .join(Branch, Branch.id == Event.branch_id)
        .where(Branch.tape_id == tape_id)
    )


def live_writes(tape_id: int, decision: str, *, session: Session) -> list[Asked]:
    """Every write of the tape answered with `decision` (the live one), in the order answered."""
    query = _asks(tape_id).where(Event.decision == decision).order_by(Event.id)
    return [Asked(*row) for row in session.execute(query)]


def read_recordings_after(
    tape_id: int, event_id: int, decisions: list[str], *, session: Session
) -> list[Asked]:
    """Reads answered with one of `decisions` (fetched live and recorded, so later served to
    others) after event `event_id`."""
    query = _asks(tape_id).where(
        Event.id > event_id,
        Event.is_read.is_(True),
        Event.decision.in_(decisions),
        Event.exchange_id.is_not(None),
    )
    return [Asked(*row) for row in session.execute(query.order_by(Event.id))]


def reads_served(
    tape_id: int, exchange_ids: Iterable[int], *, session: Session
) -> dict[tuple[str, int], int]:
    """(branch, exchange) -> how many reads of that branch were answered with the exchange."""
    wanted = sorted(set(exchange_ids))
    counts: dict[tuple[str, int], int] = {}
    for start in range(0, len(wanted), 500):  # bound the IN list
        chunk = wanted[start : start + 500]
        query = (
            select(Branch.path, Event.exchange_id, func.count())
            .join(Branch, Branch.id == Event.branch_id)
            .where(Branch.tape_id == tape_id, Event.is_read.is_(True))
            .where(Event.exchange_id.in_(chunk))
            .group_by(Branch.path, Event.exchange_id)
        )
        for path, exchange_id, count in session.execute(query):
            if exchange_id is not None:
                counts[(path, exchange_id)] = count
    return counts
