"""Sandbox identity leaves the request before keying and is a marker in stored answers."""

from __future__ import annotations

from engine.request import RequestParts
from engine.sandbox_identity import (
    MARKER,
    stored_response_headers,
    without_sandbox_identity,
)
from engine.tape_settings import TapeSettings


def request(*headers: tuple[str, str]) -> RequestParts:
    return RequestParts("POST", "http", "tools.example", 80, "/mcp", headers=headers)


def test_session_headers_and_named_cookies_leave_the_request() -> None:
    config = TapeSettings(sandbox_headers=["X-Sandbox"], sandbox_cookies=["sid"])
    raw = request(
        ("Mcp-Session-Id", "abc123"),
        ("X-Sandbox", "box-7"),
        ("Cookie", "sid=s3cr3t; theme=dark"),
        ("Accept", "application/json"),
    )
    kept = without_sandbox_identity(raw, config)
    assert kept.headers == (("Cookie", "theme=dark"), ("Accept", "application/json"))
    only_sid = without_sandbox_identity(request(("Cookie", "sid=1")), config)
    assert only_sid.headers == ()
    # Nothing to remove: the very same value (the redaction cache keys on it).
    plain = request(("Accept", "*/*"))
    assert without_sandbox_identity(plain, TapeSettings()) is plain


def test_stored_answers_keep_a_marker_in_place_of_the_session() -> None:
    headers = [("content-type", "text/event-stream"), ("mcp-session-id", "abc123")]
    assert stored_response_headers(headers, TapeSettings()) == [
        ("content-type", "text/event-stream"),
        ("mcp-session-id", MARKER),
    ]
