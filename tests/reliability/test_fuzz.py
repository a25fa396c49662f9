"""Schemathesis over the admin API and Hypothesis over the request key."""

from __future__ import annotations

import hashlib

import pytest

from bench.reliability import fuzz
from engine.keys import RequestKey, request_key
from engine.request import RequestParts


def test_schema_fuzz_finds_no_server_error() -> None:
    figures = fuzz.fuzz_admin_api(examples_per_operation=8)
    assert figures["operations"] >= 15
    assert figures["calls"] >= figures["operations"] * 4
    assert figures["server_errors"] == 0, figures["failure_examples"]
    assert set(figures["statuses"]) - {"200", "201", "204"}, "only happy paths were tried"


def test_request_key_properties_hold() -> None:
    figures = fuzz.check_key_properties(examples=150)
    assert figures["examples"]["stability"] >= 150 and figures["examples"]["no_crash"] >= 150
    assert figures["failures"] == 0, figures["failure_examples"]


def test_key_property_check_catches_an_order_sensitive_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def order_sensitive(request: RequestParts, **kwargs: object) -> RequestKey:
        key = request_key(request, **kwargs)  # type: ignore[arg-type]
        readable = f"{key.readable} {request.query!r} {request.body!r}"
        return RequestKey(readable=readable, hash=readable)

    monkeypatch.setattr(fuzz, "request_key", order_sensitive)
    figures = fuzz.check_key_properties(examples=60)
    assert figures["failures"] > 0 and not figures["held"]


def test_deeply_nested_json_body_is_keyed_not_a_crash() -> None:
    depth = 100_000
    body = b"[" * depth + b"]" * depth
    parts = RequestParts(
        "POST", "http", "h", 80, "/", (), (("Content-Type", "application/json"),), body
    )
    assert request_key(parts).readable.endswith("body:sha256:" + hashlib.sha256(body).hexdigest())
