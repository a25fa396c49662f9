"""Translate between mitmproxy flows and the resolver's internal protocol shapes.

The resolver speaks JSON with base64 bodies and headers as ordered `[name, value]` lists
(docs/internals.md). Without one place that does this translation, the hit path, the record
path and the tests would each encode headers their own way, and a served response would stop
being byte-for-byte what was recorded (header order, duplicates, raw content encoding).

Header bytes are carried as latin-1 text (groundhog/protocol/wire_codec.py): it maps every byte
to one code point and back, so any header the world sends survives the round trip unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from mitmproxy import http
from mitmproxy.net.http import status_codes

from groundhog.protocol import headers
from groundhog.protocol.decisions import Decision
from groundhog.protocol.problems import MEDIA_TYPE as PROBLEM_MEDIA_TYPE
from groundhog.protocol.wire import TRAILER_PREFIX, WireResponse, wire_response
from groundhog.protocol.wire_codec import (
    decode_body,
    encode_body,
    fields_from_pairs,
    pairs_from_fields,
    without_private_fields,
)

# Pairs, fields and bodies are translated by groundhog/protocol/wire_codec.py, and so is a
# request's resolve ask (the resolver's sealed replay makes the same asks): here, mitmproxy's side.


def strip_private_headers(request: http.Request) -> None:
    """Remove every `X-Groundhog-*` header and the proxy credentials, in place.

    These carry the worker's identity and the proxy's own bookkeeping; the world must never
    see them (cooperative headers are added back afterwards, only for cooperative hosts).
    """
    request.headers.fields = without_private_fields(request.headers.fields)


def add_upstream_headers(request: http.Request, pairs: Sequence[Sequence[str]]) -> None:
    """Append the cooperative headers the resolver named for this live call."""
    if pairs:
        request.headers.fields = request.headers.fields + fields_from_pairs(pairs)


def response_from_payload(payload: WireResponse, *, sent_body: bytes = b"") -> http.Response:
    """A mitmproxy response carrying exactly the recorded status, headers, body bytes and
    trailers (the pairs named with `TRAILER_PREFIX`).

    A `/v1/record` answer may give `"body": null`, meaning "the body you sent" (`sent_body`).
    """
    status = int(payload["status"])
    body = payload.get("body")
    pairs = payload.get("headers") or []
    head = [pair for pair in pairs if not pair[0].startswith(TRAILER_PREFIX)]
    trailers = [
        (name.removeprefix(TRAILER_PREFIX), value)
        for name, value in pairs
        if name.startswith(TRAILER_PREFIX)
    ]
    now = time.time()
    return http.Response(
        http_version=b"HTTP/1.1",
        status_code=status,
        reason=status_codes.RESPONSES.get(status, "").encode("ascii", "replace"),
        headers=fields_from_pairs(head),
        content=sent_body if body is None else decode_body(body),
        trailers=http.Headers(fields_from_pairs(trailers)) if trailers else None,
        timestamp_start=now,
        timestamp_end=now,
    )


def response_payload(
    status: int,
    fields: Iterable[tuple[bytes, bytes]],
    body: bytes,
    trailers: http.Headers | None = None,
) -> WireResponse:
    """The `response` object of a `POST /v1/record` body, its trailers after its headers."""
    pairs = pairs_from_fields(fields)
    if trailers:
        pairs += [
            [TRAILER_PREFIX + name, value] for name, value in pairs_from_fields(trailers.fields)
        ]
    return wire_response(status, pairs, encode_body(body))


def mark_response(
    response: http.Response, *, decision: str, occurrence: int | None, fingerprint: str | None
) -> None:
    """Tell the worker why it got these bytes; replaces any header of the same name."""
    response.headers[headers.DECISION] = str(decision)
    response.headers[headers.OCCURRENCE] = "" if occurrence is None else str(occurrence)
    response.headers[headers.FINGERPRINT] = fingerprint or ""


def relayed_response(status: int, headers: Sequence[tuple[str, str]], body: bytes) -> http.Response:
    """The resolver's own refusal (4xx problem+json), passed to the worker unchanged."""
    content_type = next(
        (value for name, value in headers if name.lower() == "content-type"),
        PROBLEM_MEDIA_TYPE,
    )
    response = response_from_payload(wire_response(status, [], ""))
    response.headers["Content-Type"] = content_type
    response.headers["Content-Length"] = str(len(body))
    response.raw_content = body
    # Nothing was forwarded: the worker sees the same decision as for any other refusal.
    mark_response(response, decision=Decision.REFUSED, occurrence=None, fingerprint=None)
    return response
