"""engine/session_labels.py: what `{session}` names, and the ids a request and an answer hold."""

from __future__ import annotations

from engine.request import RequestParts
from engine.sandbox_identity import MARKER
from engine.session_labels import (
    carried_session,
    names_marked_session,
    opened_label,
    opened_session,
    session_hash,
    unknown_label,
    uses_session,
)
from engine.tape_settings import TapeSettings


def request(*headers: tuple[str, str]) -> RequestParts:
    return RequestParts("POST", "http", "127.0.0.1", 8000, "/mcp", headers=headers)


def test_a_tape_uses_sessions_only_when_a_rule_names_one() -> None:
    assert not uses_session(TapeSettings())
    assert not uses_session(
        TapeSettings.model_validate({"rules": [{"path": "/x", "reads": ["doc:{id}"]}]})
    )
    assert uses_session(
        TapeSettings.model_validate(
            {"rules": [{"path": "/x", "reads": ["a"]}, {"path": "/n", "writes": ["n:{session}"]}]}
        )
    )
    assert uses_session(
        TapeSettings.model_validate(
            {"rules": [{"operation": "tools/call r", "reads": ["notes:{session}"]}]}
        )
    )


def test_a_label_is_the_opening_asks_address_the_same_for_siblings() -> None:
    assert opened_label("key", 0) == opened_label("key", 0)
    assert opened_label("key", 0) != opened_label("key", 1)
    assert opened_label("key", 0) != opened_label("other", 0)
    assert opened_label("key", 0).startswith("s-")


def test_the_hash_is_keyed_and_never_the_id() -> None:
    hashed = session_hash("sess-123", b"k" * 32)
    assert hashed == session_hash("sess-123", b"k" * 32)
    assert hashed != session_hash("sess-123", b"j" * 32)
    assert hashed != session_hash("sess-124", b"k" * 32)
    assert "sess-123" not in hashed and len(hashed) == 64
    assert unknown_label(hashed) == "unknown-" + hashed[:16]


def test_the_session_a_request_carries_by_default_and_by_the_tapes_names() -> None:
    assert carried_session(request(("Mcp-Session-Id", "abc")), TapeSettings()) == "abc"
    assert carried_session(request(("Accept", "*/*")), TapeSettings()) is None
    assert carried_session(request(("Mcp-Session-Id", "")), TapeSettings()) is None
    named = TapeSettings(sandbox_headers=["X-Sandbox"])
    assert carried_session(request(("x-sandbox", "box-7")), named) == "box-7"
    assert carried_session(request(("x-sandbox", "box-7")), TapeSettings()) is None


def test_the_session_a_live_answer_opens_and_a_stored_one_hands_out() -> None:
    live = [["content-type", "text/event-stream"], ["mcp-session-id", "fresh"]]
    assert opened_session(live, TapeSettings()) == "fresh"
    assert opened_session([["mcp-session-id", MARKER]], TapeSettings()) is None
    assert opened_session([["content-type", "x"]], TapeSettings()) is None
    assert names_marked_session([["mcp-session-id", MARKER]])
    assert not names_marked_session(live)
