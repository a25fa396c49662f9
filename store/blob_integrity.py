"""A tape's bodies checked against their bytes: the hash each blob is stored under, recomputed.

Blobs are stored under the SHA-256 of their bytes, and exchanges name their bodies by that
hash. A file edited by hand (or a damaged disk) can change a body's bytes and leave its name:
without this module an import would take the changed bytes silently and the digest, computed
over the names, would still equal the original's. Import refuses such a blob and the digest
hashes what the bytes say, so a changed body never passes for the recorded one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.models import Blob, Branch, Exchange, WriteAnswer
from store.write_answers import write_answer_body_hashes

BATCH = 200
MISSING = "missing"


def body_hashes(tape_id: int, *, session: Session) -> set[str]:
    """Every body hash the tape's exchanges (requests and responses) and write answers name."""
    query = select(Exchange.request_body_sha, Exchange.response_body_sha).where(
        Exchange.tape_id == tape_id
    )
    names: set[str] = set()
    for request_sha, response_sha in session.execute(query.execution_options(yield_per=2000)):
        names.add(request_sha)
        if response_sha:
            names.add(response_sha)
    return names | write_answer_body_hashes(tape_id, session=session)


def stored_blobs(names: set[str], *, session: Session) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of the named blobs that exist, in name order, a batch at a time."""
    ordered = sorted(names)
    for start in range(0, len(ordered), BATCH):
        part = ordered[start : start + BATCH]
        query = select(Blob.sha256, Blob.data).where(Blob.sha256.in_(part)).order_by(Blob.sha256)
        for name, data in session.execute(query):
            # A hand-edited file may hold text in the column: its bytes then fail the check.
            yield name, data.encode() if isinstance(data, str) else bytes(data)


def actual_hashes(tape_id: int, *, session: Session) -> dict[str, str]:
    """Each body name of the tape mapped to the SHA-256 of its stored bytes (or `MISSING`)."""
    names = body_hashes(tape_id, session=session)
    actual = dict.fromkeys(names, MISSING)
    for name, data in stored_blobs(names, session=session):
        actual[name] = hashlib.sha256(data).hexdigest()
    return actual


@dataclass(frozen=True)
class DamagedBody:
    """An exchange whose body's bytes do not hash to the name it is stored under."""

    exchange_id: int
    method: str
    url: str
    occurrence: int
    fingerprint: str
    part: str  # "request", "response" or a branch's write answer
    stored: str
    actual: str

    def whose(self) -> str:
        if self.part in ("request", "response"):
            return f"its {self.part} body"
        return f"the body of its {self.part}"

    def describe(self) -> str:
        found = "is missing" if self.actual == MISSING else f"hashes to {self.actual}"
        return (
            f"exchange {self.exchange_id} ({self.method} {self.url}, occurrence "
            f"{self.occurrence}, fingerprint {self.fingerprint!r}): {self.whose()}, "
            f"stored as {self.stored}, {found}"
        )


def first_damaged_body(
    tape_id: int, actual: dict[str, str], *, session: Session
) -> DamagedBody | None:
    """The first exchange (by id) naming a body whose bytes do not match, or None."""
    bad = {name for name, found in actual.items() if found != name}
    if not bad:
        return None
    query = (
        select(Exchange)
        .where(
            Exchange.tape_id == tape_id,
            Exchange.request_body_sha.in_(bad) | Exchange.response_body_sha.in_(bad),
        )
        .order_by(Exchange.id)
        .limit(1)
    )
    exchange = session.scalars(query).one_or_none()
    if exchange is None:
        return _first_damaged_write_answer(tape_id, bad, actual, session=session)
    part, stored = (
        ("request", exchange.request_body_sha)
        if exchange.request_body_sha in bad
        else ("response", exchange.response_body_sha or "")
    )
    return _damaged(exchange, part, stored, actual)


def _damaged(exchange: Exchange, part: str, stored: str, actual: dict[str, str]) -> DamagedBody:
    return DamagedBody(
        exchange.id,
        exchange.request_method,
        exchange.request_url,
        exchange.occurrence,
        exchange.fingerprint,
        part,
        stored,
        actual[stored],
    )


def _first_damaged_write_answer(
    tape_id: int, bad: set[str], actual: dict[str, str], *, session: Session
) -> DamagedBody:
    """A branch's own write answer naming a damaged body, described by its address's exchange
    (only write answers are left once no exchange names one)."""
    query = (
        select(Exchange, WriteAnswer.response_body_sha, Branch.path)
        .join(Branch, Branch.id == WriteAnswer.branch_id)
        .join(
            Exchange,
            (Exchange.tape_id == tape_id)
            & (Exchange.key_hash == WriteAnswer.key_hash)
            & (Exchange.occurrence == WriteAnswer.occurrence)
            & (Exchange.fingerprint == WriteAnswer.fingerprint),
        )
        .where(Branch.tape_id == tape_id, WriteAnswer.response_body_sha.in_(bad))
        .order_by(Exchange.id, Branch.path)
        .limit(1)
    )
    exchange, stored, branch = session.execute(query).one()
    assert stored is not None  # the query asked for a damaged body's name
    return _damaged(exchange, f"write answer of branch {branch!r}", stored, actual)
