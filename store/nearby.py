"""Recorded addresses near a request, for the near-miss explanations of a sealed miss.

A sealed miss is explained against the recordings most like it; candidates are the keys recorded
for the same host (any method), else for the same method (any host), with every address each
is recorded at. Bounded, so a large tape costs one indexed scan per refusal, not a full read.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.models import Exchange

CANDIDATE_LIMIT = 5000


def recorded_addresses(
    tape_id: int, method: str, host: str, *, session: Session, limit: int = CANDIDATE_LIMIT
) -> dict[str, list[tuple[int, str]]]:
    """Readable key -> [(occurrence, fingerprint)] of recordings like (method, host)."""
    columns = (Exchange.key_readable, Exchange.occurrence, Exchange.fingerprint)
    for condition in (Exchange.request_host == host, Exchange.request_method == method):
        query = select(*columns).where(Exchange.tape_id == tape_id, condition).limit(limit)
        found: dict[str, list[tuple[int, str]]] = {}
        for key, occurrence, fingerprint in session.execute(query):
            found.setdefault(key, []).append((occurrence, fingerprint))
        if found:
            return found
    return {}


def readable_key(tape_id: int, key_hash: str, *, session: Session) -> str | None:
    """The readable form of a key recorded on the tape at any address, or None."""
    query = select(Exchange.key_readable).where(
        Exchange.tape_id == tape_id, Exchange.key_hash == key_hash
    )
    return session.scalars(query.limit(1)).first()
