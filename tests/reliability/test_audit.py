"""The store audit catches what it exists to catch: a lost record and a second answer."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from bench.reliability.audit import audit
from store.db import make_engine

TAPE_SQL = (
    "INSERT INTO gh_tapes (id, name, world_seed, mode, online, dependency_model, config) "
    "VALUES (1, 't', 0, 'groundhog', 1, 'closure', '{}')"
)


def _store(path: Path, bodies: dict[int, bytes]) -> None:
    make_engine(f"sqlite:///{path}").dispose()
    with sqlite3.connect(path) as connection:
        connection.execute(TAPE_SQL)
        for exchange_id, body in bodies.items():
            sha = hashlib.sha256(body).hexdigest()
            connection.execute("INSERT OR IGNORE INTO gh_blobs VALUES (?, ?)", (sha, body))
            connection.execute(
                "INSERT INTO gh_exchanges (id, tape_id, key_hash, occurrence, fingerprint, "
                "key_readable, request_method, request_host, request_url, request_headers, "
                "request_body_sha, response_status, response_headers, response_body_sha) "
                "VALUES (?, 1, ?, 0, '', 'k', 'GET', 'h', 'u', '[]', '', 200, '[]', ?)",
                (exchange_id, f"key{exchange_id}", sha),
            )
    connection.close()


def _ledger(exchange_id: int, body: bytes, ticket: str) -> list[dict[str, Any]]:
    sha = hashlib.sha256(body).hexdigest()
    return [
        {"route": "resolve", "tape": "t", "action": "forward", "decision": "recorded",
         "request_key": f"key{exchange_id}", "occurrence": 0, "fingerprint": "", "ticket": ticket},
        {"route": "record", "ticket": ticket, "exchange_id": exchange_id, "kind": "response",
         "error_kind": None, "body_sha": sha},
    ]  # fmt: skip


def test_a_consistent_store_is_clean(tmp_path: Path) -> None:
    _store(tmp_path / "s.sqlite3", {1: b"one", 2: b"two"})
    ledger = _ledger(1, b"one", "a") + _ledger(2, b"two", "b")
    result = audit(tmp_path / "s.sqlite3", "t", ledger)
    assert result.clean and result.acknowledged_records == 2


def test_a_lost_record_is_caught(tmp_path: Path) -> None:
    _store(tmp_path / "s.sqlite3", {1: b"one"})
    result = audit(tmp_path / "s.sqlite3", "t", _ledger(1, b"one", "a") + _ledger(2, b"x", "b"))
    assert result.records_lost == 1 and not result.clean


def test_different_bytes_at_an_acknowledged_address_are_caught(tmp_path: Path) -> None:
    _store(tmp_path / "s.sqlite3", {1: b"one"})
    result = audit(tmp_path / "s.sqlite3", "t", _ledger(1, b"not what was stored", "a"))
    assert result.mismatched_records and not result.clean
