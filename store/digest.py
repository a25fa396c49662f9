"""The tape digest: a SHA-256 over everything a tape serves and how its branches were served it.

Recording the same world twice with the same workflow must give the same digest, and an
exported-then-imported tape must keep it; so the digest covers each exchange's address,
request and answer (status, header list in order — trailers are stored among them, prefixed —
and the body bytes), each branch's own write answers, the branch tree and, per branch, the
order of its events (which address each ask was served). It excludes row ids, tape names and
anything arrival-dependent (which sibling's ask `recorded` and which was `shared`). Bodies enter
as the hash of their stored bytes, recomputed here (store/blob_integrity.py), never as the name
they are stored under: two tapes that differ in one body byte never share a digest.

The digest is a hash of lines, each line one thing the tape holds with its identity (what it
is, e.g. an exchange's address) and its fields; `digest_lines` yields them, so an export can
state per-field hashes (store/digest_manifest.py) and an import name the first field that no
longer matches, rather than only say "changed".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.blob_integrity import actual_hashes
from store.models import Branch, Event, Exchange, WriteAnswer

DIGEST_VERSION = "groundhog-digest-v2"


@dataclass(frozen=True)
class DigestLine:
    """One thing the tape holds: `kind` and `identity` say which, `fields` what it holds."""

    kind: str
    identity: tuple[Any, ...]
    label: str  # for people: which exchange, event or branch
    fields: dict[str, Any]

    def encoded(self) -> bytes:
        return _line([self.kind, list(self.identity), self.fields])

    def field_hashes(self) -> dict[str, str]:
        return {
            name: hashlib.sha256(_line(value)).hexdigest()[:16]
            for name, value in self.fields.items()
        }


def _line(value: Any) -> bytes:
    return (
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        + b"\n"
    )


def _collation(session: Session) -> str:
    # Byte order on both databases; PostgreSQL's default collation ignores punctuation.
    return "C" if session.get_bind().dialect.name == "postgresql" else "BINARY"


def _branch_lines(tape_id: int, session: Session) -> Iterator[DigestLine]:
    query = select(Branch.path, Branch.parent_path, Branch.fork_point, Branch.shim_counters).where(
        Branch.tape_id == tape_id
    )
    for path, parent, fork_point, counters in sorted(session.execute(query), key=lambda r: r[0]):
        fields = {"parent": parent, "fork_point": fork_point, "shim_counters": counters or {}}
        yield DigestLine("branch", (path,), f"branch {path}", fields)


def _exchange_lines(tape_id: int, actual: dict[str, str], session: Session) -> Iterator[DigestLine]:
    collation = _collation(session)
    query = (
        select(Exchange)
        .where(Exchange.tape_id == tape_id)
        .order_by(
            Exchange.key_hash.collate(collation),
            Exchange.occurrence,
            Exchange.fingerprint.collate(collation),
        )
        .execution_options(yield_per=2000)
    )
    for x in session.scalars(query):
        fields = {
            "key": x.key_readable,
            "method": x.request_method,
            "url": x.request_url,
            "request_headers": x.request_headers,
            "request_body": actual.get(x.request_body_sha, x.request_body_sha),
            "status": x.response_status,
            "response_headers": x.response_headers,
            "response_body": actual.get(x.response_body_sha, "") if x.response_body_sha else "",
            "error": [x.error_kind, x.error_message],
        }
        label = (
            f"exchange {x.request_method} {x.request_url} (occurrence {x.occurrence}, "
            f"fingerprint {x.fingerprint!r})"
        )
        yield DigestLine("exchange", (x.key_hash, x.occurrence, x.fingerprint), label, fields)


def _write_answer_lines(
    tape_id: int, actual: dict[str, str], session: Session
) -> Iterator[DigestLine]:
    collation = _collation(session)
    own = (
        select(Branch.path, WriteAnswer)
        .join(Branch, Branch.id == WriteAnswer.branch_id)
        .where(Branch.tape_id == tape_id)
        .order_by(
            Branch.path.collate(collation),
            WriteAnswer.key_hash.collate(collation),
            WriteAnswer.occurrence,
            WriteAnswer.fingerprint.collate(collation),
        )
    )
    for path, answer in session.execute(own):
        body = answer.response_body_sha
        fields = {
            "status": answer.response_status,
            "response_headers": answer.response_headers,
            "response_body": actual.get(body, body) if body else body,
        }
        identity = (path, answer.key_hash, answer.occurrence, answer.fingerprint)
        label = f"branch {path}'s own write answer (occurrence {answer.occurrence})"
        yield DigestLine("write-answer", identity, label, fields)


def _event_lines(tape_id: int, session: Session) -> Iterator[DigestLine]:
    served = select(Exchange.id, Exchange.key_hash, Exchange.occurrence, Exchange.fingerprint)
    addresses = {
        row[0]: [row[1], row[2], row[3]]
        for row in session.execute(served.where(Exchange.tape_id == tape_id))
    }
    query = (
        select(Branch.path, Event)
        .join(Branch, Branch.id == Event.branch_id)
        .where(Branch.tape_id == tape_id)
        .order_by(Branch.path.collate(_collation(session)), Event.seq)
        .execution_options(yield_per=2000)
    )
    for path, event in session.execute(query):
        fields = {
            "method": event.method,
            "url": event.url,
            "asked": [event.key_hash, event.occurrence, event.fingerprint],
            "served": addresses.get(event.exchange_id) if event.exchange_id else None,
        }
        label = f"event {event.seq} of branch {path} ({event.method} {event.url})"
        yield DigestLine("event", (path, event.seq), label, fields)


def digest_lines(tape_id: int, *, session: Session) -> Iterator[DigestLine]:
    """Everything the digest covers, one line each, in the digest's order."""
    # Where the bytes match their name, the recomputed hash is the name.
    actual = actual_hashes(tape_id, session=session)
    yield from _branch_lines(tape_id, session)
    yield from _exchange_lines(tape_id, actual, session)
    yield from _write_answer_lines(tape_id, actual, session)
    yield from _event_lines(tape_id, session)


def tape_digest(tape_id: int, *, session: Session) -> tuple[str, int]:
    """(hex digest, number of exchanges), streamed so large tapes fit in memory."""
    hasher = hashlib.sha256(_line(DIGEST_VERSION))
    count = 0
    for line in digest_lines(tape_id, session=session):
        hasher.update(line.encoded())
        count += line.kind == "exchange"
    return hasher.hexdigest(), count
