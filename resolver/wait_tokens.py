"""The opaque `wait` token of the internal protocol: an ask, carried by the proxy between calls.

`/v1/resolve` answers `wait` at once when another asker is fetching the address, and the proxy
then long-polls `/v1/wait` with this token. The ask already took its occurrence, so it must not
be rebuilt from the request (that would take another); and any resolver replica must be able to
continue it, so it travels in the token rather than in one process's memory. The raw secrets an
ask holds for echo scrubbing stay out of it (they are never to leave the resolver's memory): a
waiter that takes a claim over records without that pass, as a record on another replica does.
The token is as trusted as a record from the same proxy (both routes need the proxy token); a
malformed one is a 422 naming the `wait` field, never a 500. Beside the ask it carries when the
holder's lease lapses and the settle log's mark taken before the look that answered `wait`
(resolver/wakeups.py): together they let the first `/v1/wait` skip a look that would find the
same claim. Both are optional, so a token from an older replica is still read (it always looks).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import NamedTuple

from pydantic import BaseModel, ValidationError

from resolver.asks import Ask
from resolver.dependencies import Classification
from resolver.errors import InvalidInput
from resolver.keys import RequestKey
from resolver.policy import DependencyModel, Mode
from resolver.redaction_rules import Finding
from resolver.request import RequestParts
from resolver.wakeups import Mark

VERSION = 1
# A token decompresses to at most this many bytes (a resolve body is bounded the same way).
MAX_TOKEN_JSON_BYTES = 64 * 1024 * 1024


class _Request(BaseModel):
    method: str
    scheme: str
    host: str
    port: int
    path: str
    query: list[tuple[str, str]]
    headers: list[tuple[str, str]]
    body: str


class _Token(BaseModel):
    v: int
    tape_id: int
    tape_name: str
    mode: Mode
    online: bool
    model: DependencyModel
    world_seed: int
    cooperative: bool
    branch_id: int
    branch: str
    request: _Request
    key: tuple[str, str]
    body_sha: str
    is_write: bool
    reads: list[str]
    writes: list[str]
    occurrence: int
    true_fingerprint: str
    fingerprint: str
    findings: list[tuple[str, str]] = []
    lease_expires: float | None = None
    mark: tuple[str, int] | None = None


class WaitToken(NamedTuple):
    """What a token carries: the ask, when its holder's lease lapses, and the settle mark."""

    ask: Ask
    lease_expires: float | None
    mark: Mark | None


def encode(ask: Ask, *, lease_expires: float | None = None, mark: Mark | None = None) -> str:
    request = ask.request
    document = {
        "v": VERSION,
        "tape_id": ask.tape_id,
        "tape_name": ask.tape_name,
        "mode": str(ask.mode),
        "online": ask.online,
        "model": str(ask.model),
        "world_seed": ask.world_seed,
        "cooperative": ask.cooperative,
        "branch_id": ask.branch_id,
        "branch": ask.branch,
        "request": {
            "method": request.method,
            "scheme": request.scheme,
            "host": request.host,
            "port": request.port,
            "path": request.path,
            "query": [list(pair) for pair in request.query],
            "headers": [list(pair) for pair in request.headers],
            "body": base64.b64encode(request.body).decode("ascii"),
        },
        "key": [ask.key.readable, ask.key.hash],
        "body_sha": ask.body_sha,
        "is_write": ask.classification.is_write,
        "reads": sorted(ask.classification.reads),
        "writes": sorted(ask.classification.writes),
        "occurrence": ask.occurrence,
        "true_fingerprint": ask.true_fingerprint,
        "fingerprint": ask.fingerprint,
        "findings": [[finding.where, finding.rule] for finding in ask.findings],
        "lease_expires": lease_expires,
        "mark": None if mark is None else list(mark),
    }
    packed = zlib.compress(json.dumps(document, separators=(",", ":")).encode(), 1)
    return base64.urlsafe_b64encode(packed).decode("ascii")


def _unpack(token: str) -> bytes:
    try:
        packed = base64.urlsafe_b64decode(token.encode("ascii"))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_TOKEN_JSON_BYTES)
    except (binascii.Error, ValueError, UnicodeEncodeError, zlib.error) as error:
        raise InvalidInput(f"wait token is malformed: {error}", field="wait") from error
    if inflater.unconsumed_tail or not inflater.eof:
        raise InvalidInput("wait token is malformed: truncated or oversized", field="wait")
    return raw


def decode(token: str) -> Ask:
    return decode_wait(token).ask


def decode_wait(token: str) -> WaitToken:
    raw = _unpack(token)
    try:
        doc = _Token.model_validate_json(raw)
    except ValidationError as error:
        raise InvalidInput(f"wait token is malformed: {error}", field="wait") from error
    if doc.v != VERSION:
        raise InvalidInput(f"wait token version {doc.v} is not {VERSION}", field="wait")
    wire = doc.request
    try:
        body = base64.b64decode(wire.body, validate=True)
    except (binascii.Error, ValueError) as error:
        raise InvalidInput("wait token is malformed: request body", field="wait") from error
    request = RequestParts(
        method=wire.method,
        scheme=wire.scheme,
        host=wire.host,
        port=wire.port,
        path=wire.path,
        query=tuple(wire.query),
        headers=tuple(wire.headers),
        body=body,
    )
    ask = Ask(
        tape_id=doc.tape_id,
        tape_name=doc.tape_name,
        mode=doc.mode,
        online=doc.online,
        model=doc.model,
        world_seed=doc.world_seed,
        cooperative=doc.cooperative,
        branch_id=doc.branch_id,
        branch=doc.branch,
        request=request,
        key=RequestKey(*doc.key),
        body_sha=doc.body_sha,
        classification=Classification(doc.is_write, frozenset(doc.reads), frozenset(doc.writes)),
        occurrence=doc.occurrence,
        true_fingerprint=doc.true_fingerprint,
        fingerprint=doc.fingerprint,
        findings=tuple(Finding(where, rule) for where, rule in doc.findings),
    )
    return WaitToken(ask, doc.lease_expires, None if doc.mark is None else Mark(*doc.mark))
