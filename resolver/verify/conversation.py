"""What each branch of an exported tape asked and was served, in order, and a clean start.

Verifying a tape means asking again exactly what every branch asked, in its order, forking
where the branch tree says the forks happened, and comparing the answers with what was served.
The events hold the order and the addresses; the exchanges they point at hold the request (as
stored, credentials already placeholders) and the answer. The replay needs the tape as it stood
before any branch ran — its recordings, its root, no events, no counters — or every replayed
ask would land on a later occurrence than the one it was served at: `fresh_start` writes that.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select, text, update

from store.db import make_engine, make_session_factory, transaction
from store.digest_manifest import LINES, STATED
from store.models import Blob, Branch, Event, Exchange, OccurrenceCounter, ResourceVersion, Tape
from store.transfer import TransferError


@dataclass(frozen=True)
class Ask:
    """One event of a branch: the request to send again and the answer to expect."""

    seq: int
    decision: str
    key_readable: str
    occurrence: int
    fingerprint: str
    exchange_id: int | None
    method: str
    url: str
    headers: list[list[str]]
    body: bytes
    status: int | None
    response_headers: list[list[str]]
    response_body_sha: str | None

    @property
    def replayable(self) -> bool:
        """Whether the tape holds what this ask was served (a refusal, a failed live call or a
        passthrough left nothing to serve again)."""
        return self.exchange_id is not None


@dataclass
class BranchConversation:
    path: str
    parent: str | None
    fork_point: int
    shim_counters: dict[str, Any]
    asks: list[Ask] = field(default_factory=list)


@dataclass
class Conversation:
    tape: str
    world_seed: int
    config: dict[str, Any]
    branches: dict[str, BranchConversation]

    def children(self, path: str) -> list[BranchConversation]:
        found = [branch for branch in self.branches.values() if branch.parent == path]
        return sorted(found, key=lambda branch: (branch.fork_point, branch.path))


def _bodies(session: Any, names: set[str]) -> dict[str, bytes]:
    rows = session.execute(select(Blob.sha256, Blob.data).where(Blob.sha256.in_(sorted(names))))
    return {name: bytes(data) for name, data in rows}


def read_conversation(path: Path) -> Conversation:
    """The one tape in the export at `path`, as its branches asked and were served."""
    engine = make_engine(f"sqlite:///{path}", create_schema=False)
    try:
        with transaction(make_session_factory(engine)) as session:
            tapes = list(session.scalars(select(Tape)))
            if len(tapes) != 1:
                raise TransferError(
                    f"a tape export holds exactly one tape, this holds {len(tapes)}"
                )
            (tape,) = tapes
            branches: dict[str, BranchConversation] = {}
            ids: dict[int, BranchConversation] = {}
            for branch in session.scalars(select(Branch).where(Branch.tape_id == tape.id)):
                conversation = BranchConversation(
                    branch.path, branch.parent_path, branch.fork_point, branch.shim_counters or {}
                )
                branches[branch.path] = ids[branch.id] = conversation
            query = (
                select(Event, Exchange)
                .outerjoin(Exchange, Exchange.id == Event.exchange_id)
                .where(Event.branch_id.in_(list(ids)))
                .order_by(Event.branch_id, Event.seq)
            )
            rows = list(session.execute(query))
            bodies = _bodies(session, {x.request_body_sha for _, x in rows if x is not None})
            for event, exchange in rows:
                ids[event.branch_id].asks.append(_ask(event, exchange, bodies))
            return Conversation(tape.name, tape.world_seed, dict(tape.config or {}), branches)
    finally:
        engine.dispose()


def _ask(event: Event, exchange: Exchange | None, bodies: dict[str, bytes]) -> Ask:
    if exchange is None:
        return Ask(
            event.seq, event.decision, "", event.occurrence, event.fingerprint, None,
            event.method, event.url, [], b"", None, [], None,
        )  # fmt: skip
    return Ask(
        seq=event.seq,
        decision=event.decision,
        key_readable=exchange.key_readable,
        occurrence=event.occurrence,
        fingerprint=event.fingerprint,
        exchange_id=exchange.id,
        method=exchange.request_method,
        url=exchange.request_url,
        headers=[list(pair) for pair in exchange.request_headers or []],
        body=bodies.get(exchange.request_body_sha, b""),
        status=exchange.response_status,
        response_headers=[list(pair) for pair in exchange.response_headers or []],
        response_body_sha=exchange.response_body_sha,
    )


def fresh_start(export: Path, target: Path) -> None:
    """Copy `export` to `target` as the tape stood before any branch ran: its recordings and
    root kept, sealed; no events, counters, versions or other branches."""
    shutil.copyfile(export, target)
    engine = make_engine(f"sqlite:///{target}", create_schema=False)
    try:
        with transaction(make_session_factory(engine)) as session:
            session.execute(delete(Event))
            session.execute(delete(OccurrenceCounter))
            session.execute(delete(ResourceVersion))
            session.execute(delete(Branch).where(Branch.path != "root"))
            session.execute(update(Branch).values(event_count=0, fork_point=0))
            session.execute(update(Tape).values(online=False))
            # What the export stated held for the tape with its events, not for this start.
            session.execute(text(f"DROP TABLE IF EXISTS {STATED}"))
            session.execute(text(f"DROP TABLE IF EXISTS {LINES}"))
    finally:
        engine.dispose()
