"""The bytes a worker is served: recorded responses, upstream failures, sealed refusals.

A failure before any HTTP answer is not the world's answer: it is served as a 502 and not
recorded, unless the tape opts in, when it reaches every sibling as the same bytes. A
sealed miss must explain itself (tape, branch, key, occurrence, fingerprint, nearest recorded
keys) so a user can see why a replay diverged. Both are built here, deterministically.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy.orm import Session

from engine.asks import Ask
from engine.cache import Recorded
from engine.keys import KEY_VERSION
from engine.near_miss import NearMiss
from engine.redaction_rules import without_identity
from groundhog.protocol.wire import HeaderPairs, WireResponse, encode_base64, wire_response
from resolver.errors import PROBLEM_MEDIA_TYPE, problem_body
from resolver.protocol_refusals import in_protocol_words
from store import exchanges
from store.models import Exchange

PROBLEM_HEADERS: HeaderPairs = [["Content-Type", PROBLEM_MEDIA_TYPE]]


def credential_only_difference(key: str, nearest: list[str]) -> bool:
    """A recorded key differs from `key` only in its credential placeholders."""
    anonymous = without_identity(key)
    return any(other != key and without_identity(other) == anonymous for other in nearest)


def refused(
    ask: Ask, near: list[NearMiss], *, other_key_versions: list[str] | None = None, **extras: Any
) -> WireResponse:
    """The sealed-miss 502: the address asked, and what differs in the nearest recordings."""
    credential_only = credential_only_difference(ask.key.readable, [miss.key for miss in near])
    versions = other_key_versions or []
    because = (
        "; the tape holds this request recorded with another credential (only the redacted "
        "credentials differ): list the host in the tape's interchangeable_credentials "
        "if its credentials name no identity"
        if credential_only
        else ""
    )
    if versions:
        because += (
            f"; the tape holds recordings under key version {', '.join(versions)} and this "
            f"resolver keys requests under {KEY_VERSION}: they miss until the tape is "
            "re-recorded (unseal it and run the workflow again online)"
        )
    hint = f"; nearest recording: {near[0].summary}" if near else "; the tape has nothing like it"
    body = problem_body(
        502,
        "sealed-miss",
        "Not on tape",
        f"tape {ask.tape_name!r} is sealed and has no recording for this request on branch "
        f"{ask.branch!r} (occurrence {ask.occurrence}, fingerprint {ask.fingerprint!r}); "
        f"nothing was sent upstream{because}{hint}",
        credential_only_difference=credential_only,
        key_version=KEY_VERSION,
        recorded_key_versions=versions,
        tape=ask.tape_name,
        branch=ask.branch,
        request_key=ask.key.readable,
        request_key_hash=ask.key.hash,
        occurrence=ask.occurrence,
        fingerprint=ask.fingerprint,
        nearest_keys=[miss.key for miss in near],
        near_misses=[miss.as_json() for miss in near],
        **extras,
    )
    spoken = in_protocol_words(ask.request, body)
    return spoken or wire_response(502, PROBLEM_HEADERS, encode_base64(body))


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


def upstream_failed(
    *,
    tape_name: str,
    key_readable: str,
    occurrence: int,
    fingerprint: str,
    kind: str,
    message: str,
) -> WireResponse:
    """The 502 for a live call that failed before the world answered; nothing was recorded."""
    body = problem_body(
        502,
        "upstream-failed",
        "Upstream failed",
        f"the upstream call failed before any HTTP answer ({kind}): {message}; nothing was "
        "recorded, the next ask tries again",
        tape=tape_name,
        request_key=key_readable,
        occurrence=occurrence,
        fingerprint=fingerprint,
        error_kind=kind,
    )
    return wire_response(502, PROBLEM_HEADERS, encode_base64(body))


def recorded(exchange: Exchange, *, session: Session, tape_name: str) -> WireResponse:
    """The wire form of an exchange's answer."""
    if exchange.error_kind is not None:
        body = upstream_error_body(exchange, tape_name)
        return wire_response(502, PROBLEM_HEADERS, encode_base64(body))
    body = exchanges.get_blob(exchange.response_body_sha, session=session)
    return wire_response(
        cast(int, exchange.response_status), exchange.response_headers or [], encode_base64(body)
    )


def recorded_of(answer: exchanges.RecordedAnswer) -> Recorded:
    """A recorded answer with no error (`answer.servable_as_read`), ready to serve."""
    return Recorded(answer.exchange_id, from_answer(answer), answer.headers)


def from_answer(answer: exchanges.RecordedAnswer) -> WireResponse:
    """The wire form of an answer read for the resolve path (one without an error)."""
    if answer.status is None:
        raise ValueError(f"exchange {answer.exchange_id} holds an error, not an answer")
    return wire_response(answer.status, answer.headers, encode_base64(answer.body or b""))
