"""The redaction corpus (issue 31, item 6): credential shapes from real APIs, each in the place
it travels, never kept in a request (nor its key) nor in a response that echoes it, in any
content coding; and ordinary fields beside them stay readable.

The shapes live in one fixture file (tests/engine/fixtures/credential_shapes.json) so a new
shape is one line there; each is one test per direction.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from engine.content_coding import decode_content, encode_content
from engine.keys import request_key
from engine.redaction import Redacted, policy_from_config, redact_request
from engine.request import RequestParts
from engine.tape_settings import TapeSettings
from resolver.echoes import scrub_response

CORPUS = json.loads((Path(__file__).parent / "fixtures" / "credential_shapes.json").read_text())
SHAPES = CORPUS["shapes"]
READABLE = CORPUS["readable"]
KEY = b"k" * 32
DEFAULT = policy_from_config(TapeSettings())
BOUNDARY = "corpusBoundary42"


def _nested(path: str, value: Any) -> Any:
    """`a.b.0.c` -> {"a": {"b": [{"c": value}]}}."""
    document: Any = value
    for part in reversed(path.split(".")):
        document = [document] if part.isdigit() else {part: document}
    return document


def _multipart(fields: list[tuple[str, str]]) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields
    ]
    return ("".join(parts) + f"--{BOUNDARY}--\r\n").encode()


def build_request(shape: dict[str, Any]) -> RequestParts:
    """The request a client of `shape["api"]` sends, the credential where it travels."""
    place, name, value = shape["place"], shape["field"], shape["value"]
    extra = [tuple(pair) for pair in shape.get("with", [])]
    request = RequestParts("POST", "https", "api.example.com", 443, shape.get("path", "/api"))
    if place == "query":
        return request.with_changes(method="GET", query=((name, value), *extra))
    if place == "header":
        return request.with_changes(method="GET", headers=((name, value),))
    if place == "path":
        return request.with_changes(method="GET", path=value)
    if place == "form":
        body = urlencode([(name, value), *extra]).encode()
        content_type = "application/x-www-form-urlencoded"
    elif place == "json":
        body = json.dumps(_nested(name, value)).encode()
        content_type = "application/json"
    elif place == "multipart":
        body = _multipart([("title", "report"), (name, value)])
        content_type = f"multipart/form-data; boundary={BOUNDARY}"
    else:
        body, content_type = value.encode(), "text/plain"
    return request.with_changes(headers=(("Content-Type", content_type),), body=body)


def secret_texts(shape: dict[str, Any]) -> list[str]:
    """What must never be kept: the named secret part, else every string in the value."""
    if "secret" in shape:
        return [shape["secret"]]
    value = shape["value"]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str)]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return [str(value)]


def _kept_text(redacted: Redacted) -> str:
    request = redacted.request
    body = request.body.decode("latin-1")
    return json.dumps(
        [request.path, request.query, request.headers, body, request_key(request).readable]
    )


def _spellings(secret: str) -> list[str]:
    return [secret, json.dumps(secret)[1:-1]]


@pytest.mark.parametrize("shape", SHAPES, ids=[shape["name"] for shape in SHAPES])
def test_a_credential_never_stays_in_the_request_or_its_key(shape: dict[str, Any]) -> None:
    redacted = redact_request(build_request(shape), DEFAULT, KEY)
    kept = _kept_text(redacted)
    for secret in secret_texts(shape):
        assert not any(form in kept for form in _spellings(secret)), (shape["name"], kept)
    assert redacted.findings, shape["name"]
    # The report names rules, never values.
    assert not any(secret in f.rule for f in redacted.findings for secret in secret_texts(shape))


def _echo_of(shape: dict[str, Any]) -> str:
    """How a world echoes the credential back: the value as the request's placeholder took it."""
    value = shape["value"]
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return shape.get("secret", value)


@pytest.mark.parametrize("encoding", ["identity", "gzip", "br", "zstd"])
@pytest.mark.parametrize("shape", SHAPES, ids=[shape["name"] for shape in SHAPES])
def test_a_credential_echoed_in_a_response_is_scrubbed(
    shape: dict[str, Any], encoding: str
) -> None:
    redacted = redact_request(build_request(shape), DEFAULT, KEY)
    echoed = _echo_of(shape)
    document = json.dumps({"you_sent": echoed, "note": "ok"}).encode()
    headers = [["Content-Type", "application/json"], ["X-Echo", echoed.splitlines()[0]]]
    if encoding != "identity":
        headers.append(["Content-Encoding", encoding])
    body = encode_content(document, encoding)
    kept_headers, kept_body, _hits = scrub_response(headers, body, redacted.secrets)
    decoded = decode_content(kept_body, encoding)
    assert decoded is not None
    text = decoded.decode("utf-8") + json.dumps(kept_headers)
    assert json.loads(decoded)["note"] == "ok"  # the rest of the answer is intact
    for form in _spellings(echoed):
        assert form not in text, (shape["name"], encoding)


@pytest.mark.parametrize("shape", READABLE, ids=[shape["name"] for shape in READABLE])
def test_ordinary_fields_beside_them_stay_readable(shape: dict[str, Any]) -> None:
    request = build_request(shape)
    redacted = redact_request(request, DEFAULT, KEY)
    assert redacted.request == request and not redacted.findings, redacted.findings
