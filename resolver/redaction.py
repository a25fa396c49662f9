"""Redaction: secrets never reach the store (DESIGN §4).

Credentials in request headers and cookies in responses are dropped before anything is keyed
or written, and a tape can add its own headers, query parameters and JSON body paths. Without
this, an exported tape would carry API keys to whoever receives it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from resolver.keys import decode_content
from resolver.request import RequestParts

REDACTED = "[redacted]"
DEFAULT_REQUEST_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})
DEFAULT_RESPONSE_HEADERS = frozenset({"set-cookie"})


def redact_headers(
    headers: Iterable[Sequence[str]], defaults: frozenset[str], extra: Iterable[str] = ()
) -> list[tuple[str, str]]:
    dropped = defaults | {name.lower() for name in extra}
    return [(name, value) for name, value in headers if name.lower() not in dropped]


def _redact_path(value: Any, path: list[str]) -> bool:
    """Replace the value at `path` inside `value` in place; True if something was replaced."""
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        if head not in value:
            return False
        if rest:
            return _redact_path(value[head], rest)
        value[head] = REDACTED
        return True
    if isinstance(value, list):
        if head == "*":
            hits = [_redact_path(item, rest) if rest else False for item in value]
            if not rest:
                value[:] = [REDACTED] * len(value)
                return bool(value)
            return any(hits)
        if head.isdigit() and int(head) < len(value):
            if rest:
                return _redact_path(value[int(head)], rest)
            value[int(head)] = REDACTED
            return True
    return False


def redact_json_body(
    body: bytes, headers: list[tuple[str, str]], json_paths: Sequence[str]
) -> tuple[bytes, list[tuple[str, str]]]:
    """The body with each dotted JSON path's value replaced; untouched if nothing matched."""
    if not json_paths or not body:
        return body, headers
    encoding = next((v for k, v in headers if k.lower() == "content-encoding"), None)
    decoded = decode_content(body, encoding)
    if decoded is None:
        return body, headers
    try:
        document = json.loads(decoded.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # too deep to parse: left as sent
        return body, headers
    changed = False
    for path in json_paths:
        changed = _redact_path(document, path.split(".")) or changed
    if not changed:
        return body, headers
    # The redacted body is stored decoded, so its encoding header must go with it.
    kept = [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode(), kept


def redact_request(
    request: RequestParts,
    *,
    headers: Iterable[str] = (),
    params: Iterable[str] = (),
    json_paths: Sequence[str] = (),
) -> RequestParts:
    """The request as it may be keyed and stored."""
    kept_headers = redact_headers(request.headers, DEFAULT_REQUEST_HEADERS, headers)
    secret_params = set(params)
    query = tuple(
        (name, REDACTED if name in secret_params else value) for name, value in request.query
    )
    body, kept_headers = redact_json_body(request.body, kept_headers, json_paths)
    return request.with_changes(headers=tuple(kept_headers), query=query, body=body)


def redact_response_headers(
    headers: Iterable[Sequence[str]], extra: Iterable[str] = ()
) -> list[tuple[str, str]]:
    return redact_headers(headers, DEFAULT_RESPONSE_HEADERS, extra)
