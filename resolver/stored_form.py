"""The stored form of a live answer: what a recording keeps, and what it must refuse to keep.

A recording is served to every sibling branch, so it must be what the tape's rules allow to be
kept: response headers redacted by the tape's `redact_headers`, then headers and body scrubbed
of the request's secrets echoed back (resolver/echoes.py). The record (resolver/recording.py)
stores this form and serves it to the recording branch too, and a stream's head is answered in
it before its body arrives, so both build it here; without one builder the head, the record and
the exchange could disagree on what was redacted, and a secret kept in one would leak. Header
fields outside Latin-1 are refused up front: they could never be served again.

One difference is kept apart: the credentials the world issued in the body (resolver/
issued_tokens.py) are stored as placeholders, but the branch whose request went live was
handed the real ones by the world, and must be able to use them. `stored_forms` also answers
the form as received (the same, tokens in clear) for the record's answer to that branch alone;
it is never stored.
"""

from __future__ import annotations

from typing import Any

from engine.redaction import redact_response_headers
from engine.refs import TapeRef
from engine.sandbox_identity import stored_response_headers
from resolver.echoes import Secrets, scrub_response
from resolver.errors import InvalidInput
from resolver.issued_tokens import redact_issued
from resolver.resolve_tx.units import Unit
from resolver.schemas import RecordRequest
from store import exchanges
from store.claims import Pending
from store.models import Tape


def check_latin1_headers(headers: list[tuple[str, str]], field: str) -> None:
    """HTTP/1 header fields are Latin-1: a value outside it could never be served again."""
    for index, (name, value) in enumerate(headers):
        for part, text in (("name", name), ("value", value)):
            try:
                text.encode("latin-1")
            except UnicodeEncodeError as error:
                raise InvalidInput(
                    f"{field}[{index}] ({name!r}) has a {part} outside Latin-1; "
                    "send header bytes decoded as Latin-1",
                    field=f"{field}[{index}]",
                    header=name,
                ) from error


Form = tuple[list[list[str]], bytes]


def stored_forms(
    tape: Tape | TapeRef,
    headers: list[tuple[str, str]],
    body: bytes,
    echoed: Secrets,
    *,
    redaction_key: bytes,
) -> tuple[Form, Form | None]:
    """The stored form, and the form as received when the world issued credentials in the body
    (the stored form but for them, in clear: only for the branch that received it live), or
    None when it issued none."""
    kept = redact_response_headers(headers, tape.settings.redact_headers, key=redaction_key)
    kept = stored_response_headers(kept, tape.settings)
    scrubbed_headers, scrubbed_body, _echoes = scrub_response(kept, body, echoed)
    stored = redact_issued(scrubbed_headers, scrubbed_body, redaction_key)
    if stored[1] == scrubbed_body:
        return stored, None
    return stored, (scrubbed_headers, scrubbed_body)


def stored_form(
    tape: Tape | TapeRef,
    headers: list[tuple[str, str]],
    body: bytes,
    echoed: Secrets,
    *,
    redaction_key: bytes,
) -> Form:
    """Headers redacted by the tape's rules (a `Set-Cookie` value a keyed placeholder), sandbox
    identity marked (never kept in clear), headers and body scrubbed of echoes, then the
    credentials the world issued in the body kept as issued placeholders."""
    stored, _received = stored_forms(tape, headers, body, echoed, redaction_key=redaction_key)
    return stored


def exchange_content(
    unit: Unit,
    pending: Pending,
    tape: TapeRef,
    wire: RecordRequest,
    body: bytes,
    echoed: Secrets,
    *,
    redaction_key: bytes,
) -> tuple[exchanges.ExchangeContent, bytes, Form | None]:
    """What the exchange will hold (redacted, echoes scrubbed), its stored body, and the answer
    as received when the world issued credentials in it (`stored_forms`; never stored).

    The stored body is put in the store's blobs with the unit's commit (PostgreSQL: in its
    round trip): nothing references a blob by a foreign key, so the exchange may name it first.
    """
    request = pending.request
    content: dict[str, Any] = {
        "key_readable": request["key_readable"],
        "request_method": request["method"],
        "request_host": request["host"],
        "request_url": request["url"],
        "request_headers": request["headers"],
        "request_body_sha": request["body_sha"],
    }
    stored, received = b"", None
    if wire.response is not None:
        (headers, stored), received = stored_forms(
            tape, wire.response.headers, body, echoed, redaction_key=redaction_key
        )
        content.update(
            response_status=wire.response.status,
            response_headers=headers,
            response_body_sha=exchanges.put_blob_later(stored, unit=unit),
        )
    elif wire.error is not None:
        content.update(error_kind=wire.error.kind, error_message=wire.error.message)
    return exchanges.ExchangeContent(**content), stored, received
