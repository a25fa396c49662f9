"""The tape digest: a SHA-256 over the canonical content of a tape's exchanges, branches' own
write answers and branch tree.

Recording the same world twice with the same workflow must give the same digest, and an
exported-then-imported tape must keep it; so the digest covers addresses, requests, responses
and the branch tree, and excludes row ids, tape names and anything order-of-arrival dependent.
Bodies enter as the hash of their stored bytes, recomputed here (store/blob_integrity.py), never
as the name they are stored under: two tapes that differ in one body byte never share a digest.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.blob_integrity import actual_hashes
from store.models import Branch, Exchange, WriteAnswer

DIGEST_VERSION = "groundhog-digest-v1"
# Positions of the body hashes in the digest's exchange rows (the query below).
REQUEST_BODY, RESPONSE_BODY = 7, 10


def _line(value: Any) -> bytes:
    return (
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        + b"\n"
    )


def tape_digest(tape_id: int, *, session: Session) -> tuple[str, int]:
    """(hex digest, number of exchanges), streamed so large tapes fit in memory."""
    hasher = hashlib.sha256(_line(DIGEST_VERSION))
    branches = select(Branch.path, Branch.parent_path, Branch.shim_counters).where(
        Branch.tape_id == tape_id
    )
    for path, parent, counters in sorted(session.execute(branches), key=lambda row: row[0]):
        hasher.update(_line(["branch", path, parent, counters or {}]))
    # Byte order on both databases; PostgreSQL's default collation ignores punctuation.
    collation = "C" if session.get_bind().dialect.name == "postgresql" else "BINARY"
    query = (
        select(
            Exchange.key_hash,
            Exchange.occurrence,
            Exchange.fingerprint,
            Exchange.key_readable,
            Exchange.request_method,
            Exchange.request_url,
            Exchange.request_headers,
            Exchange.request_body_sha,
            Exchange.response_status,
            Exchange.response_headers,
            Exchange.response_body_sha,
            Exchange.error_kind,
            Exchange.error_message,
        )
        .where(Exchange.tape_id == tape_id)
        .order_by(
            Exchange.key_hash.collate(collation),
            Exchange.occurrence,
            Exchange.fingerprint.collate(collation),
        )
        .execution_options(yield_per=2000)
    )
    # Where the bytes match their name, the recomputed hash is the name: the digest is unchanged.
    actual = actual_hashes(tape_id, session=session)
    count = 0
    for row in session.execute(query):
        fields = list(row)
        fields[REQUEST_BODY] = actual[fields[REQUEST_BODY]]
        if fields[RESPONSE_BODY]:
            fields[RESPONSE_BODY] = actual[fields[RESPONSE_BODY]]
        hasher.update(_line(["exchange", *fields]))
        count += 1
    # Each branch's own write answers, by branch path and address: tape content as exchanges are.
    own = (
        select(
            Branch.path,
            WriteAnswer.key_hash,
            WriteAnswer.occurrence,
            WriteAnswer.fingerprint,
            WriteAnswer.response_status,
            WriteAnswer.response_headers,
            WriteAnswer.response_body_sha,
        )
        .join(Branch, Branch.id == WriteAnswer.branch_id)
        .where(Branch.tape_id == tape_id)
        .order_by(
            Branch.path.collate(collation),
            WriteAnswer.key_hash.collate(collation),
            WriteAnswer.occurrence,
            WriteAnswer.fingerprint.collate(collation),
        )
    )
    for answer in session.execute(own):
        *address, body = answer
        hasher.update(_line(["write-answer", *address, actual[body] if body else body]))
    return hasher.hexdigest(), count
