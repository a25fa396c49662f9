"""Unit tests of redaction: secrets never reach the store, and the key is computed after it."""

from __future__ import annotations

import json
from hashlib import sha256

from resolver.keys import request_key
from resolver.redaction import REDACTED, redact_request, redact_response_headers
from resolver.request import RequestParts

REQUEST = RequestParts(
    "POST",
    "https",
    "api.example.com",
    443,
    "/login",
    query=(("token", "abc"), ("q", "x")),
    headers=(
        ("Authorization", "Bearer s"),
        ("Cookie", "c=1"),
        ("X-Api-Key", "k"),
        ("Proxy-Authorization", "p"),
        ("X-Secret", "s"),
        ("Content-Type", "application/json"),
    ),
    body=b'{"user": "ann", "password": "hunter2", "items": [{"card": "4111"}]}',
)


def test_default_credential_headers_are_dropped() -> None:
    names = [name for name, _ in redact_request(REQUEST).headers]
    assert names == ["X-Secret", "Content-Type"]


def test_tape_adds_headers_params_and_json_paths() -> None:
    redacted = redact_request(
        REQUEST, headers=["x-secret"], params=["token"], json_paths=["password", "items.*.card"]
    )
    assert [name for name, _ in redacted.headers] == ["Content-Type"]
    assert dict(redacted.query)["token"] == REDACTED
    body = json.loads(redacted.body)
    assert body == {"user": "ann", "password": REDACTED, "items": [{"card": REDACTED}]}


def test_key_after_redaction_ignores_the_secret_value() -> None:
    other = REQUEST.with_changes(query=(("token", "zzz"), ("q", "x")))
    config = {"params": ["token"], "json_paths": ["password"]}
    assert request_key(redact_request(REQUEST, **config)) == request_key(
        redact_request(other, **config)
    )


def test_non_json_bodies_are_left_alone() -> None:
    raw = REQUEST.with_changes(body=b"\xff not json")
    assert redact_request(raw, json_paths=["password"]).body == b"\xff not json"


def test_response_set_cookie_dropped_with_order_and_duplicates_kept() -> None:
    headers = [["A", "1"], ["Set-Cookie", "s"], ["A", "2"], ["X-Private", "p"]]
    assert redact_response_headers(headers, ["x-private"]) == [("A", "1"), ("A", "2")]


def test_json_nested_past_the_recursion_limit_is_left_as_sent() -> None:
    depth = 100_000
    body = b"[" * depth + b"]" * depth
    nested = REQUEST.with_changes(body=body)
    redacted = redact_request(nested, json_paths=["password"])
    assert redacted.body == body
    assert request_key(redacted).readable.endswith("body:sha256:" + sha256(body).hexdigest())
