"""The request key: a versioned canonical form of a request (DESIGN §3).

Two asks are "the same request" exactly when their keys match, so everything that should not
distinguish them (query order, JSON whitespace, header case, default ports, ignored params) is
normalised away here, and everything that should (method, host, path, body) is kept. The key is
computed after redaction, so a scrubbed tape still replays; the placeholders of credentials
join it, so two identities never share an answer unless the tape says they may. Bodies that
are not valid JSON or UTF-8 are keyed by hash: a key is never a crash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode

from engine.content_coding import decode_content
from engine.operations import Operation
from engine.protocol_noise import user_agent_product
from engine.request import RequestParts

# v2: repeated query names keep their relative order; negotiation headers and the placeholders
# of redacted headers join the key.
# v3: a request a protocol profile reads names its operation (`op:`), and a JSON-RPC body is
# keyed without its ids; sandbox identity (Mcp-Session-Id, tape-named cookies) leaves the key.
# v4: protocol noise leaves the key (MCP `params._meta`, `initialize`'s `clientInfo`, a keyed
# `User-Agent`'s versions: engine/protocol_noise.py), and `Accept-Encoding` does: content
# coding is the proxy's business, a recorded body is served in a coding the asker accepts;
# `Accept: */*` is keyed as no `Accept` (the same answer either way).
KEY_VERSION = "v4"
# Headers that change the answer (a 304, a 206, another language or media type) by default.
NEGOTIATION_HEADERS = frozenset(
    {
        "range",
        "if-none-match",
        "if-modified-since",
        "if-match",
        "accept",
        "accept-language",
        # A WebSocket upgrade is a conversation (proxy/websocket_tape.py), not the plain GET.
        "upgrade",
    }
)
_PLACEHOLDER_MARK = "[redacted:"


@dataclass(frozen=True)
class RequestKey:
    readable: str
    hash: str


def _hashed(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def canonical_body(body: bytes, content_type: str | None, content_encoding: str | None) -> str:
    """JSON with sorted keys and no whitespace, form pairs sorted, anything else by SHA-256."""
    if not body:
        return ""
    decoded = decode_content(body, content_encoding)
    if decoded is None:
        return _hashed(body)
    media = (content_type or "").split(";")[0].strip().lower()
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        return _hashed(decoded)
    if "json" in media or (not media and text.lstrip()[:1] in ("{", "[")):
        # Nesting deeper than the interpreter's recursion limit is not a ValueError; such a
        # body is still a valid ask and is keyed by its hash rather than crashing the resolve.
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return _hashed(decoded)
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except RecursionError:
            return _hashed(decoded)
    if media == "application/x-www-form-urlencoded":
        pairs = sorted(parse_qsl(text, keep_blank_values=True), key=lambda pair: pair[0])
        return "form:" + urlencode(pairs, quote_via=quote)
    return _hashed(decoded)


def _no_preference(name: str, value: str) -> bool:
    """`Accept: */*` says what no `Accept` says (RFC 9110 §12.5.1): curl and requests send
    it, urllib and Node send nothing, and the world answers both alike."""
    return name == "accept" and value.replace(" ", "") == "*/*"


def _keyed_value(name: str, value: str) -> str:
    return user_agent_product(value) if name == "user-agent" else value


def request_key(
    request: RequestParts,
    *,
    ignore_params: Iterable[str] = (),
    match_headers: Iterable[str] = (),
    ignore_headers: Iterable[str] = (),
    operation: Operation | None = None,
    keyed_body: str | None = None,
) -> RequestKey:
    """The key of an (already redacted) request: readable form and its SHA-256.

    Headers in the key: the negotiation headers (less `ignore_headers`), the tape's
    `match_headers`, and every header holding a redaction placeholder (a credential: two
    identities must not share an answer). An `operation` (engine/protocol_profiles.py) is
    named in the key, and its body without the JSON-RPC ids replaces the body. Query pairs
    sort by name only (stable), so a repeated name keeps its values' order; headers sort by
    name and value. `keyed_body`: the body without a catalog entry's noise fields
    (engine/catalog), canonical JSON.
    """
    ignored = set(ignore_params)
    query = sorted(
        ((name, value) for name, value in request.query if name not in ignored),
        key=lambda pair: pair[0],
    )
    wanted = (NEGOTIATION_HEADERS - {name.lower() for name in ignore_headers}) | {
        name.lower() for name in match_headers
    }
    headers = sorted(
        (name.lower(), _keyed_value(name.lower(), value.strip()))
        for name, value in request.headers
        if (name.lower() in wanted or _PLACEHOLDER_MARK in value)
        and not _no_preference(name.lower(), value)
    )
    query_text = f"?{urlencode(query, quote_via=quote)}" if query else ""
    parts = [
        KEY_VERSION,
        request.method.upper(),
        f"{request.scheme.lower()}://{request.authority}{request.path}{query_text}",
    ]
    if operation is not None:
        parts.append("op:" + operation.label)
    if headers:
        parts.append("headers:" + json.dumps(headers, separators=(",", ":"), ensure_ascii=False))
    if operation is not None and operation.keyed_body is not None:
        body = operation.keyed_body
    elif keyed_body is not None:
        body = keyed_body
    else:
        body = canonical_body(
            request.body, request.header("content-type"), request.header("content-encoding")
        )
    if body:
        parts.append("body:" + body)
    readable = " ".join(parts)
    return RequestKey(readable=readable, hash=hashlib.sha256(readable.encode()).hexdigest())
