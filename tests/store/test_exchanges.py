"""Exchanges, blobs and events on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from store import exchanges
from store.branches import get_branch
from store.counters import take_event_seq
from store.db import Store, transaction
from store.models import Blob, Event
from tests.store.test_tapes import make_tape


def content(body_sha: str, status: int = 200) -> exchanges.ExchangeContent:
    return exchanges.ExchangeContent(
        key_readable="v1 GET https://a/x",
        request_method="GET",
        request_host="a",
        request_url="https://a/x",
        request_headers=[["Accept", "*/*"]],
        request_body_sha=body_sha,
        response_status=status,
        response_headers=[["X-Dup", "1"], ["Content-Type", "t"], ["X-Dup", "2"]],
        response_body_sha=body_sha,
    )


def test_blobs_are_stored_once_per_content_hash(store: Store) -> None:
    with transaction(store.write) as session:
        first = exchanges.put_blob(b"\x00\xffbytes", session=session)
        second = exchanges.put_blob(b"\x00\xffbytes", session=session)
        assert first == second == exchanges.sha256_hex(b"\x00\xffbytes")
        assert exchanges.get_blob(first, session=session) == b"\x00\xffbytes"
        assert session.scalar(select(func.count()).select_from(Blob)) == 1
        assert exchanges.get_blob(None, session=session) == b""


def test_first_recording_at_an_address_wins(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        sha = exchanges.put_blob(b"one", session=session)
        first = exchanges.insert_new_exchange(tape_id, "k", 0, "", content(sha), session=session)
        again = exchanges.insert_new_exchange(
            tape_id, "k", 0, "", content(sha, status=500), session=session
        )
        assert isinstance(first, int) and again is None  # the address was taken
        winner = exchanges.find_winner(tape_id, "k", 0, "", session=session)
        assert (winner.id, winner.response_status) == (first, 200)
        other = exchanges.insert_new_exchange(tape_id, "k", 0, "fp", content(sha), session=session)
        assert other is not None and other != first
        with pytest.raises(LookupError, match="vanished"):
            exchanges.find_winner(tape_id, "k", 1, "", session=session)
    with store.engine.connect() as connection:  # the record path's Core connection
        assert exchanges.find_winner(tape_id, "k", 0, "", session=connection).id == first
    with transaction(store.read) as session:
        found = exchanges.find_exchange(tape_id, "k", 0, "", session=session)
        assert found.response_headers == [["X-Dup", "1"], ["Content-Type", "t"], ["X-Dup", "2"]]
        assert exchanges.get_exchange(tape_id + 1000, found.id, session=session) is None


def test_events_are_numbered_per_branch_and_finished_by_record(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        seqs = [take_event_seq(root.id, session=session) for _ in range(2)]
        event_id = exchanges.add_event(
            session=session,
            branch_id=root.id,
            seq=seqs[-1],
            method="GET",
            url="u",
            key_hash="k",
            occurrence=0,
            fingerprint="",
            decision="recorded",
            is_read=True,
            true_fingerprint_nonempty=False,
            exchange_id=None,
        )
        exchanges.finish_event(event_id, decision="passthrough", exchange_id=None, session=session)
        event = session.get(Event, event_id)
        assert seqs == [1, 2] and event.decision == "passthrough" and event.seq == 2
