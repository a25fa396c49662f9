"""An imported tape is scrubbed by this deployment's default rules, whatever the file says."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from engine.redaction_rules import PLACEHOLDER
from resolver.import_scrub import scrub_imported
from store import exchanges
from store.db import Store, open_store, transaction
from store.models import Exchange
from tests.store.test_exchanges import content
from tests.store.test_tapes import make_tape

KEY = b"d" * 32
SECRET = "tok-9f8e7d6c5b4a"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    yield opened
    opened.dispose()


def _import_one(store: Store, name: str = "t", **fields: object) -> int:
    tape_id = make_tape(store, name)
    with transaction(store.write) as session:
        sha = exchanges.put_blob(b"body", session=session)
        exchanges.insert_new_exchange(
            tape_id, "hash", 0, "", replace(content(sha), **fields), session=session
        )
    return tape_id


def _stored(store: Store, tape_id: int) -> Exchange:
    with transaction(store.read) as session:
        found = exchanges.find_exchange(tape_id, "hash", 0, "", session=session)
        assert found is not None
        session.expunge(found)
        return found


def test_credentials_in_headers_url_and_key_are_replaced_and_cookies_dropped(
    store: Store,
) -> None:
    url = f"https://api.example/v1/search?q=cats&api_key={SECRET}"
    tape_id = _import_one(
        store,
        key_readable=f"v3 GET {url}",
        request_url=url,
        request_headers=[["Authorization", f"Bearer {SECRET}"], ["Accept", "*/*"]],
        response_headers=[["Set-Cookie", "sid=abc"], ["Content-Type", "text/plain"]],
    )
    with transaction(store.write) as session:
        assert scrub_imported(tape_id, KEY, session=session) == 1
    stored = _stored(store, tape_id)
    everything = repr(
        (stored.request_headers, stored.request_url, stored.key_readable, stored.response_headers)
    )
    assert SECRET not in everything
    assert PLACEHOLDER.search(dict(stored.request_headers)["Authorization"])
    assert ["Accept", "*/*"] in stored.request_headers
    assert "q=cats" in stored.request_url and "q=cats" in stored.key_readable
    assert stored.response_headers == [["Content-Type", "text/plain"]]
    assert stored.key_hash == "hash"  # the address is kept, so the tape still replays


def test_a_clean_tape_is_left_unchanged_and_scrubbing_twice_changes_nothing(
    store: Store,
) -> None:
    tape_id = _import_one(store, response_headers=[["Content-Type", "t"]])
    with transaction(store.write) as session:
        assert scrub_imported(tape_id, KEY, session=session) == 0
    dirty = _import_one(store, "dirty", request_headers=[["X-Api-Key", SECRET]])
    with transaction(store.write) as session:
        assert scrub_imported(dirty, KEY, session=session) == 1
    once = _stored(store, dirty).request_headers
    with transaction(store.write) as session:
        assert scrub_imported(dirty, KEY, session=session) == 0
    assert _stored(store, dirty).request_headers == once
