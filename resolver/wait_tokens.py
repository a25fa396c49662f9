"""The opaque `wait` token of the internal protocol: an ask, carried by the proxy between calls.

`/v1/resolve` answers `wait` at once when another asker is fetching the address, and the proxy
then long-polls `/v1/wait` with this token. The ask's occurrence, key and fingerprints were
fixed when it was taken (its occurrence is counted once it is answered), so it is not rebuilt
from the request; and any resolver replica must be able to continue it, so it travels in the
token rather than in one process's memory. The ask is encoded from its dataclass by one codec,
so no field is left behind (a waiter that lost the tape's simulator refused where its ask
would have simulated). The raw secrets an
ask holds for echo scrubbing stay out of it (they are never to leave the resolver's memory): a
waiter that takes a claim over records without that pass, as a record on another replica does.
The token is as trusted as a record from the same proxy (both routes need the proxy token); a
malformed one is a 422 naming the `wait` field, never a 500. Beside the ask it carries when the
holder's claim lapses and the settle log's mark taken before the look that answered `wait`
(resolver/wakeups.py): together they let the first `/v1/wait` skip a look that would find the
same claim (both optional: without them it always looks), the decision it will have if it
ends up fetching, and which attempt it waits on, so that attempt's failure is its failure.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from dataclasses import replace
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from engine.asks import Ask
from engine.policy import Decision
from resolver.errors import InvalidInput
from resolver.wakeups import Mark

# 2: the ask is encoded from the `Ask` dataclass itself (1 copied its fields by hand, and lost
# the tape's simulator and faults on the way).
VERSION = 2
# A token decompresses to at most this many bytes (a resolve body is bounded the same way).
MAX_TOKEN_JSON_BYTES = 64 * 1024 * 1024
# Fields of `Ask` that never leave the resolver's memory: a decoded ask has their defaults.
MEMORY_ONLY = frozenset({"secrets"})


class _Token(BaseModel):
    """The token's document: the ask as its dataclass declares it (bytes as base64), so a
    field added to `Ask` travels without anyone editing this module."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    v: int
    ask: Ask
    decision: Decision
    claim_expires: float | None = None
    mark: tuple[str, int] | None = None
    holder: str | None = None


class WaitToken(NamedTuple):
    """What a token carries: the ask, when its holder's claim lapses, the settle mark, and
    which attempt it waits on (engine/facts.py `holder_of`)."""

    ask: Ask
    decision: Decision
    claim_expires: float | None
    mark: Mark | None
    holder: str | None = None


def encode(
    ask: Ask,
    decision: Decision,
    *,
    claim_expires: float | None = None,
    mark: Mark | None = None,
    holder: str | None = None,
) -> str:
    kept = replace(ask, secrets=())  # MEMORY_ONLY
    document = _Token(
        v=VERSION,
        ask=kept,
        decision=decision,
        claim_expires=claim_expires,
        mark=mark,
        holder=holder,
    )
    packed = zlib.compress(document.model_dump_json().encode(), 1)
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
    mark = None if doc.mark is None else Mark(*doc.mark)
    return WaitToken(doc.ask, doc.decision, doc.claim_expires, mark, doc.holder)
