"""store/identity.py: a store is named by a token made with it, the same for every reader and
every reopening, and another store's differs (tape ids are reused across stores, tokens not)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import delete

from store.db import Store, open_store, transaction
from store.identity import store_token
from store.models import StoreIdentity


def token_of(store: Store) -> str:
    with transaction(store.write) as session:
        return store_token(session=session)


def test_a_store_keeps_its_token_and_a_fresh_one_has_another(store: Store, tmp_path: Path) -> None:
    token = token_of(store)
    assert len(token) == 32 and token_of(store) == token
    fresh = open_store(f"sqlite:///{tmp_path / 'fresh.sqlite3'}")
    try:
        assert token_of(fresh) != token
    finally:
        fresh.dispose()


def test_a_reopened_store_has_the_same_token(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    first = open_store(url)
    token = token_of(first)
    first.dispose()
    again = open_store(url)
    try:
        assert token_of(again) == token
    finally:
        again.dispose()


def test_a_missing_row_is_made_again_once(store: Store) -> None:
    before = token_of(store)
    with transaction(store.write) as session:
        session.execute(delete(StoreIdentity))
    after = token_of(store)
    assert after != before and token_of(store) == after
