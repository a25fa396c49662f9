"""Unit tests of resolver/record_outcomes.py: what a record stores and tells the proxy to serve."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from engine.dependencies import Classification
from engine.policy import Action
from engine.resolve_results import Resolution
from resolver.record_outcomes import (
    pending_address,
    recorded_write,
    store_answer,
    upstream_failed,
)
from resolver.resolution import Resolver
from resolver.schemas import RecordRequest, ResponseIn, UpstreamError
from store import claims
from store.claims import Pending
from store.db import Store
from store.refs import find_tape_ref
from store.unit import unit_of_work
from tests.resolver.test_hit_path import ask
from tests.resolver.test_stored_form import PENDING


def test_a_pending_records_address_is_tape_key_occurrence_and_fingerprint() -> None:
    pending = replace(PENDING, tape_id=3, occurrence=2, fingerprint="fp")
    assert pending_address(pending) == (3, "k" * 64, 2, "fp")


def test_a_recorded_write_writes_what_its_forward_kept() -> None:
    request = {**PENDING.request, "method": "POST", "host": "api.example.com"}
    kept = replace(PENDING, is_write=True, request={**request, "writes": ["path:a/1", "host:b"]})
    parts, classification = recorded_write(kept)
    assert (parts.method, parts.normalised_host) == ("POST", "api.example.com")
    assert classification == Classification(True, frozenset(), frozenset({"path:a/1", "host:b"}))


@pytest.mark.parametrize("writes", [[], None], ids=["none-kept", "older-record"])
def test_a_recorded_write_with_no_resources_kept_writes_its_origin(
    writes: list[str] | None,
) -> None:
    request = {
        **PENDING.request,
        "method": "POST",
        "host": "api.example.com",
        "url": "https://api.example.com:8443/x",
    }
    if writes is None:
        del request["writes"]
    else:
        request["writes"] = writes
    parts, classification = recorded_write(replace(PENDING, request=request))
    assert (parts.method, parts.normalised_host) == ("POST", "api.example.com")
    assert classification.writes == frozenset({"origin:https://api.example.com:8443"})


def forwarded(store: Store, path: str) -> Pending:
    """The pending record of a live call handed out for `path` on root/a, taken from the store."""
    resolution = Resolver(store, max_body_bytes=1024, claim_seconds=30).resolve(ask(path, "root/a"))
    assert isinstance(resolution, Resolution) and resolution.action is Action.FORWARD
    assert resolution.ticket is not None
    with unit_of_work(store) as unit:
        pending = claims.pop_pending(resolution.ticket, session=unit.connection)
    assert pending is not None
    return pending


def answered(body: bytes) -> RecordRequest:
    response = ResponseIn(status=200, headers=[("X-A", "1")], body=base64.b64encode(body).decode())
    return RecordRequest(ticket="t", response=response)


KEY = b"k" * 32


def test_the_first_answer_is_stored_and_a_later_one_is_served_the_winners_bytes(
    store: Store,
) -> None:
    pending = forwarded(store, "/race")
    with unit_of_work(store) as unit:
        tape = find_tape_ref(pending.tape_id, session=unit.connection)
        assert tape is not None
        first = store_answer(
            unit, pending, tape, answered(b"first"), b"first", (), redaction_key=KEY
        )
        assert first.recorded and first.decision == "recorded"
        # Byte-identical to what the proxy sent: not repeated back.
        assert first.response == {"status": 200, "headers": [["X-A", "1"]], "body": None}
    late = replace(pending, ticket="late")  # another fetcher of the same address, later
    with unit_of_work(store) as unit:
        second = store_answer(
            unit, late, tape, answered(b"second"), b"second", (), redaction_key=KEY
        )
    assert not second.recorded and second.decision == "shared"
    assert second.exchange_id == first.exchange_id
    assert second.response is not None and second.response["body"] is not None
    assert base64.b64decode(second.response["body"]) == b"first"


def test_a_transport_failure_is_a_502_unless_a_read_was_recorded_meanwhile(store: Store) -> None:
    pending = forwarded(store, "/flaky")
    failure = RecordRequest(ticket="t", error=UpstreamError(kind="timeout", message="slow"))
    with unit_of_work(store) as unit:
        tape = find_tape_ref(pending.tape_id, session=unit.connection)
        assert tape is not None
        failed = upstream_failed(unit, pending, tape, failure)
    assert (failed.decision, failed.exchange_id) == ("upstream-failed", None)
    assert not failed.recorded
    assert failed.response is not None and failed.response["status"] == 502
    with unit_of_work(store) as unit:
        won = store_answer(unit, pending, tape, answered(b"won"), b"won", (), redaction_key=KEY)
        shared = upstream_failed(unit, replace(pending, ticket="late"), tape, failure)
        write = upstream_failed(unit, replace(pending, is_write=True), tape, failure)
    assert (shared.decision, shared.exchange_id) == ("shared", won.exchange_id)
    assert shared.response is not None and shared.response["body"] is not None
    assert base64.b64decode(shared.response["body"]) == b"won"
    assert write.decision == "upstream-failed"  # a write's failure is never someone else's answer


TOKEN = b'{"access_token": "ghu_' + b"Q" * 36 + b'"}'


def test_a_read_that_was_issued_a_token_is_answered_it_as_received_and_a_late_fetcher_is_not(
    store: Store,
) -> None:
    pending = forwarded(store, "/session")
    with unit_of_work(store) as unit:
        tape = find_tape_ref(pending.tape_id, session=unit.connection)
        assert tape is not None
        first = store_answer(unit, pending, tape, answered(TOKEN), TOKEN, (), redaction_key=KEY)
    assert first.recorded and first.response is not None and first.response["body"]
    stored = base64.b64decode(first.response["body"])
    assert b"ghu_QQQ" not in stored and b"[redacted:issued.40.alnum.ghu_:" in stored
    # Only in the answer to the fetcher: the token as received (the bytes it sent).
    assert first.as_received == {"status": 200, "headers": [["X-A", "1"]], "body": None}
    assert first.kept is not None and first.kept.body == stored
    with unit_of_work(store) as unit:
        late = store_answer(
            unit,
            replace(pending, ticket="late"),
            tape,
            answered(TOKEN),
            TOKEN,
            (),
            redaction_key=KEY,
        )
        write = store_answer(
            unit,
            replace(pending, is_write=True),
            tape,
            answered(TOKEN),
            TOKEN,
            (),
            redaction_key=KEY,
        )
    assert not late.recorded and late.as_received is None  # served the recording: surrogates
    assert write.as_received is None  # a write is served its live answer anyway


def test_an_answer_without_issued_credentials_has_no_form_as_received(store: Store) -> None:
    pending = forwarded(store, "/plain")
    with unit_of_work(store) as unit:
        tape = find_tape_ref(pending.tape_id, session=unit.connection)
        assert tape is not None
        plain = store_answer(unit, pending, tape, answered(b"{}"), b"{}", (), redaction_key=KEY)
    assert plain.recorded and plain.as_received is None
