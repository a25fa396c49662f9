"""The bytes a worker is served: recorded responses, recorded upstream errors, sealed refusals.

Upstream errors are the world's answer and must reach every sibling as the same bytes, and a
sealed miss must explain itself (tape, branch, key, occurrence, fingerprint, nearest recorded
keys) so a user can see why a replay diverged. Both are built here, deterministically.
"""

from __future__ import annotations

import difflib
from typing import Any

from sqlalchemy.orm import Session

from resolver.asks import Ask
from resolver.errors import PROBLEM_MEDIA_TYPE, problem_body
from resolver.redaction_rules import without_identity
from resolver.schemas import encode_base64
from store import exchanges
from store.models import Exchange

NEAREST_KEYS = 3
PROBLEM_HEADERS = [["Content-Type", PROBLEM_MEDIA_TYPE]]


def nearest_keys(candidates: list[str], key: str, count: int = NEAREST_KEYS) -> list[str]:
    """The recorded keys most similar to `key` (difflib ratio), best first, ties by key."""
    scored = sorted(
        ((difflib.SequenceMatcher(None, key, other).ratio(), other) for other in candidates),
        key=lambda pair: (-pair[0], pair[1]),
    )
    return [other for _score, other in scored[:count]]


def credential_only_difference(key: str, nearest: list[str]) -> bool:
    """A recorded key differs from `key` only in its credential placeholders."""
    anonymous = without_identity(key)
    return any(other != key and without_identity(other) == anonymous for other in nearest)


def refused(ask: Ask, nearest: list[str]) -> dict[str, Any]:
    credential_only = credential_only_difference(ask.key.readable, nearest)
    because = (
        "; the tape holds this request recorded with another credential (only the redacted "
        "credentials differ): list the host in the tape's interchangeable_credentials "
        "if its credentials name no identity"
        if credential_only
        else ""
    )
    body = problem_body(
        502,
        "sealed-miss",
        "Not on tape",
        f"tape {ask.tape_name!r} is sealed and has no recording for this request on branch "
        f"{ask.branch!r} (occurrence {ask.occurrence}, fingerprint {ask.fingerprint!r}); "
        f"nothing was sent upstream{because}",
        credential_only_difference=credential_only,
        tape=ask.tape_name,
        branch=ask.branch,
        request_key=ask.key.readable,
        request_key_hash=ask.key.hash,
        occurrence=ask.occurrence,
        fingerprint=ask.fingerprint,
        nearest_keys=nearest,
    )
    return {"status": 502, "headers": PROBLEM_HEADERS, "body": encode_base64(body)}


def upstream_error_body(exchange: Exchange, tape_name: str) -> bytes:
    """The same 502 bytes for the recorder and for every sibling served this exchange."""
    return problem_body(
        502,
        "upstream-error",
        "Upstream error",
        f"the upstream call failed ({exchange.error_kind}): {exchange.error_message}",
        tape=tape_name,
        request_key=exchange.key_readable,
        occurrence=exchange.occurrence,
        fingerprint=exchange.fingerprint,
        error_kind=exchange.error_kind,
    )


def recorded(exchange: Exchange, *, session: Session, tape_name: str) -> dict[str, Any]:
    """The wire form of an exchange's answer."""
    if exchange.error_kind is not None:
        body = upstream_error_body(exchange, tape_name)
        return {"status": 502, "headers": PROBLEM_HEADERS, "body": encode_base64(body)}
    body = exchanges.get_blob(exchange.response_body_sha, session=session)
    return {
        "status": exchange.response_status,
        "headers": exchange.response_headers or [],
        "body": encode_base64(body),
    }
