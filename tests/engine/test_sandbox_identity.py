"""Sandbox identity leaves the request before keying and is a marker in stored answers."""

from __future__ import annotations

from engine.request import RequestParts
from engine.sandbox_identity import (
    MARKER,
    own_sandbox_fields,
    stored_response_headers,
    without_sandbox_identity,
)
from engine.tape_settings import TapeSettings
from groundhog.protocol.sandbox import minted_session


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


def test_a_served_answer_takes_the_askers_sandbox_values_and_drops_a_stored_cookie() -> None:
    cookie = (b"Set-Cookie", b"s=[redacted:set-cookie:abc]")
    fields = ((b"Mcp-Session-Id", MARKER.encode()), cookie, (b"X-A", b"1"))
    asked = {"mcp-session-id": "mine"}
    own = own_sandbox_fields(fields, lambda name: asked.get(name.lower()), "t", "root/a")
    assert own == ((b"Mcp-Session-Id", b"mine"), (b"X-A", b"1"))
    minted = own_sandbox_fields(fields, lambda _name: None, "t", "root/a", occurrence=2)
    assert minted is not None and minted[0] == (
        b"Mcp-Session-Id", minted_session("t", "root/a", 2).encode()
    )  # fmt: skip
    kept = own_sandbox_fields(fields, asked.get, "t", "root/a", replayed_write=True)
    assert kept is not None and cookie in kept  # a replayed write keeps its login's cookie
    assert own_sandbox_fields(((b"X-A", b"1"),), asked.get, "t", "root/a") is None
