"""Live calls and calls answered from the tape, counted per branch, decision and host.

A cost report prices live calls per host, so the tallies must carry the host; the report's own
tallies (store/inspect.py) do not. Counted in the database; an ask that never got an exchange
(a failure before the world answered, a refusal) takes its host from its URL. Takes `session=`
and never commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from store.models import Branch, Event, Exchange


@dataclass(frozen=True)
class HostTally:
    branch: str
    decision: str
    host: str
    count: int


def host_tallies(tape_id: int, *, session: Session) -> list[HostTally]:
    counted = (
        select(Branch.path, Event.decision, Exchange.request_host, func.count())
        .select_from(Event)
        .join(Branch, Branch.id == Event.branch_id)
        .join(Exchange, Exchange.id == Event.exchange_id)
        .where(Branch.tape_id == tape_id)
        .group_by(Branch.path, Event.decision, Exchange.request_host)
    )
    tallies = [
        HostTally(path, decision, (host or "").lower(), n)
        for path, decision, host, n in session.execute(counted)
    ]
    # Few by nature (failures, refusals, unrecorded): grouped by URL, the host parsed here.
    unanswered = (
        select(Branch.path, Event.decision, Event.url, func.count())
        .select_from(Event)
        .join(Branch, Branch.id == Event.branch_id)
        .where(Branch.tape_id == tape_id, Event.exchange_id.is_(None))
        .group_by(Branch.path, Event.decision, Event.url)
    )
    for path, decision, url, n in session.execute(unanswered):
        tallies.append(HostTally(path, decision, (urlsplit(url).hostname or "").lower(), n))
    return tallies
