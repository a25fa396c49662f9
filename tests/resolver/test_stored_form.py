"""Unit tests of resolver/stored_form.py: what a recording keeps of a live answer."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.redaction_rules import Placeholders
from engine.refs import TapeRef
from resolver.errors import InvalidInput
from resolver.schemas import RecordRequest, ResponseIn, UpstreamError
from resolver.stored_form import (
    check_latin1_headers,
    exchange_content,
    stored_form,
    stored_forms,
)
from store.claims import Pending
from store.db import Store, open_store
from store.exchanges import get_blob, sha256_hex
from store.unit import unit_of_work

SECRET = "sk-live-0123456789abcdef"
ECHOED = ((SECRET, "<redacted:api-key>"),)
KEY = b"k" * 32
# The stored form of the cookie value "1" under KEY (its shape: tests/engine/test_redaction.py).
COOKIE_PLACEHOLDER = Placeholders(KEY, False).replace("1", "response", "set-cookie")


def tape(**config: object) -> TapeRef:
    return TapeRef(1, "t", 7, "groundhog", True, "closure", dict(config))


def test_latin1_header_fields_pass() -> None:
    check_latin1_headers([("X-Name", "café"), ("Set-Cookie", "a=1")], "response.headers")


@pytest.mark.parametrize(
    ("headers", "part"),
    [([("X-Ok", "1"), ("X-Mark", "✓")], "value"), ([("X-Ok", "1"), ("X-✓", "1")], "name")],
)
def test_a_header_field_outside_latin1_is_refused_and_located(
    headers: list[tuple[str, str]], part: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_latin1_headers(headers, "head.headers")
    assert f"has a {part} outside Latin-1" in refused.value.detail
    assert refused.value.extras == {"field": "head.headers[1]", "header": headers[1][0]}


def test_the_stored_form_drops_redacted_headers_then_scrubs_echoes() -> None:
    headers = [
        ("Set-Cookie", "s=1"),
        ("X-Session", "abc"),
        ("X-Echo", f"key={SECRET}"),
        ("Content-Type", "text/plain"),
    ]
    body = f"you sent {SECRET}".encode()
    kept, stored = stored_form(
        tape(redact_headers=["x-session"]), headers, body, ECHOED, redaction_key=KEY
    )
    assert kept == [
        ["Set-Cookie", f"s={COOKIE_PLACEHOLDER}"],
        ["X-Echo", "key=<redacted:api-key>"],
        ["Content-Type", "text/plain"],
    ]
    assert stored == b"you sent <redacted:api-key>"


def test_without_echoes_the_body_is_kept_as_sent() -> None:
    kept, stored = stored_form(tape(), [("X-A", "1")], b"body", (), redaction_key=KEY)
    assert (kept, stored) == ([["X-A", "1"]], b"body")


def test_an_issued_token_is_a_placeholder_on_tape_and_in_clear_only_in_the_form_as_received():
    token = "ghu_" + "T" * 36
    headers = [("Content-Type", "application/json"), ("X-Echo", SECRET)]
    body = f'{{"access_token": "{token}", "echo": "{SECRET}"}}'.encode()
    (_kept, stored), received = stored_forms(tape(), headers, body, ECHOED, redaction_key=KEY)
    assert token.encode() not in stored and b"[redacted:issued.40.alnum.ghu_:" in stored
    assert received is not None
    received_headers, received_body = received
    # The same stored form (echoes scrubbed), but the token the world issued, as it came.
    assert received_headers == [
        ["Content-Type", "application/json"],
        ["X-Echo", "<redacted:api-key>"],
    ]
    assert received_body == f'{{"access_token": "{token}", "echo": "<redacted:api-key>"}}'.encode()
    assert stored_forms(tape(), headers, b"{}", ECHOED, redaction_key=KEY)[1] is None


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'stored.sqlite3'}")
    yield opened
    opened.dispose()


PENDING = Pending(
    ticket="t1",
    tape_id=1,
    branch_id=1,
    event_id=1,
    key_hash="k" * 64,
    occurrence=0,
    fingerprint="",
    decision="recorded",
    is_write=False,
    request={
        "key_readable": "v1 GET https://h/x",
        "method": "GET",
        "host": "h",
        "url": "https://h/x",
        "headers": [["Accept", "*/*"]],
        "body_sha": "b" * 64,
        "writes": [],
    },
)


def test_an_answers_content_holds_the_request_and_the_stored_response(store: Store) -> None:
    body = f"echo {SECRET}".encode()
    response = ResponseIn(
        status=201,
        headers=[("Set-Cookie", "s=1"), ("X-A", "1")],
        body=base64.b64encode(body).decode(),
    )
    wire = RecordRequest(ticket="t1", response=response)
    with unit_of_work(store) as unit:
        content, stored, _received = exchange_content(
            unit, PENDING, tape(), wire, body, ECHOED, redaction_key=KEY
        )
    assert stored == b"echo <redacted:api-key>"
    assert (content.key_readable, content.request_method, content.request_url) == (
        "v1 GET https://h/x",
        "GET",
        "https://h/x",
    )
    assert content.request_headers == [["Accept", "*/*"]] and content.request_body_sha == "b" * 64
    assert (content.response_status, content.response_headers) == (
        201,
        [["Set-Cookie", f"s={COOKIE_PLACEHOLDER}"], ["X-A", "1"]],
    )
    assert content.response_body_sha == sha256_hex(stored)
    assert content.error_kind is None
    with unit_of_work(store) as unit:  # the stored body, not the live one, is in the blobs
        assert get_blob(content.response_body_sha, session=unit.session) == stored


def test_a_transport_failure_is_kept_as_its_kind_and_message(store: Store) -> None:
    wire = RecordRequest(ticket="t1", error=UpstreamError(kind="reset", message="peer reset"))
    with unit_of_work(store) as unit:
        content, stored, _received = exchange_content(
            unit, PENDING, tape(), wire, b"", (), redaction_key=KEY
        )
    assert stored == b""
    assert (content.error_kind, content.error_message) == ("reset", "peer reset")
    assert content.response_status is None and content.response_body_sha is None
