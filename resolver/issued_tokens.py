"""Credentials the world issues, kept off the tape (DESIGN §4, issue 55).

A login answers with tokens (`access_token`, `refresh_token`, `id_token`), a create-key call
with a key: live credentials the world handed to one branch. Stored as they came, every sibling
would be served them and every export and dataset would carry them. Before a response is
stored its body's token fields (JSON at any depth, or a form-encoded token answer) and any value
in a named secret format become issued placeholders (`Placeholders.issued`), keyed like the same
value in a request. The proxy serves a replaying branch a surrogate of the same shape in their
place (groundhog/protocol/surrogates.py, proxy/sandbox_answers.py), which keys as the original
when the branch presents it. This is the `Set-Cookie` mechanism (engine/redaction.py) carried
into bodies. The branch whose request went live still gets the real value: a write its live
answer, a read whose answer became the recording the form as received that `/v1/record` answers
it alone (resolver/stored_form.py, proxy/live.py). A sibling waiting on that same live read, or a
fetcher that lost the race to record it, is served the recording, so surrogates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from engine.content_coding import decode_content
from engine.redaction_rules import Placeholders, name_words
from engine.secret_formats import FormatScanner, builtin_formats

# Token fields of OAuth 2.0 / OpenID Connect answers and of key-issuing APIs, by their words.
ISSUED_FIELDS = frozenset(
    {
        ("access", "token"),
        ("refresh", "token"),
        ("id", "token"),
        ("token",),
        ("session", "token"),
        ("api", "key"),
        ("apikey",),
        ("client", "secret"),
        ("secret",),
    }
)
_FORM = "application/x-www-form-urlencoded"
_FIELD_WORDS = ("token", "key", "secret")


@cache
def _scanner() -> FormatScanner:
    return FormatScanner(builtin_formats(), entropy=False)


def _issued_name(name: str) -> bool:
    return tuple(name_words(name)) in ISSUED_FIELDS


def _scan(text: str, marks: Placeholders) -> str:
    found = _scanner().find(text) if len(text) >= 15 else []
    if not found:
        return text
    parts, last = [], 0
    for start, end, _rule in found:
        parts += [text[last:start], marks.issued(text[start:end], "response", named_format=True)]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _walk(value: Any, marks: Placeholders) -> Any:
    if isinstance(value, str):
        return _scan(value, marks)
    if isinstance(value, list):
        return [_walk(item, marks) for item in value]
    if isinstance(value, dict):
        return {
            name: (
                marks.issued(item, "response", named_format=bool(_scanner().find(item)))
                if isinstance(name, str) and isinstance(item, str) and _issued_name(name)
                else _walk(item, marks)
            )
            for name, item in value.items()
        }
    return value


def _redacted_text(text: str, media: str, marks: Placeholders) -> str:
    if "json" in media or text.lstrip()[:1] in ("{", "["):
        lowered = text.lower()
        if not any(word in lowered for word in _FIELD_WORDS) and not _scanner().find(text):
            return text  # the common answer: no token field, no credential: never parsed
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            return _scan(text, marks)
        before = len(marks.findings)
        redacted = _walk(document, marks)
        if len(marks.findings) == before:
            return text
        return json.dumps(redacted, separators=(",", ":"), ensure_ascii=False)
    if media == _FORM:
        pairs = parse_qsl(text, keep_blank_values=True)
        kept = [
            (n, marks.issued(v, "response", named_format=False) if _issued_name(n) else v)
            for n, v in pairs
        ]
        # The placeholder kept literal (`[`, `:`, `]` need no escape in a form value), or the
        # proxy would never find it to serve a surrogate in its place.
        return urlencode(kept, quote_via=quote, safe="/[]:") if kept != pairs else text
    return _scan(text, marks)


def redact_issued(
    headers: Sequence[Sequence[str]], body: bytes, key: bytes
) -> tuple[list[list[str]], bytes]:
    """Headers and body as a tape may keep them, with every credential the world issued in the
    body an issued placeholder (such a body is kept decoded, its `Content-Length` updated)."""
    kept = [list(pair) for pair in headers]
    encoding = next((v for k, v in kept if k.lower() == "content-encoding"), "") or ""
    media = next((v for k, v in kept if k.lower() == "content-type"), "") or ""
    media = media.split(";")[0].strip().lower()
    decoded = decode_content(body, encoding) if body else None
    if not decoded:
        return kept, body
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        return kept, body
    marks = Placeholders(key, False)
    redacted = _redacted_text(text, media, marks)
    if redacted == text:
        return kept, body
    # Stored decoded: the proxy finds the placeholders to serve as surrogates without decoding
    # every answer it serves (the proxy encodes for the asker as for any identity body).
    new_body = redacted.encode()
    kept = [
        [k, str(len(new_body))] if k.lower() == "content-length" else [k, v]
        for k, v in kept
        if k.lower() != "content-encoding"
    ]
    return kept, new_body
