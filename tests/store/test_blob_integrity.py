"""Bodies are checked against their bytes: import refuses a changed body, the digest sees it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from store.db import Store, open_store, transaction
from store.digest import tape_digest
from store.exchanges import sha256_hex
from store.tapes import get_tape, list_tapes
from store.transfer import DamagedTape, export_tape, import_tape
from tests.store.test_digest import ADDRESSES, fill


def flip_first_byte(file: Path, sha: str) -> None:
    """Change one byte of the blob stored as `sha` in an exported file, as a hand edit would."""
    with sqlite3.connect(file) as connection:
        query = "SELECT data FROM gh_blobs WHERE sha256 = ?"
        (data,) = connection.execute(query, (sha,)).fetchone()
        changed = bytes([data[0] ^ 0x01]) + bytes(data[1:])
        connection.execute("UPDATE gh_blobs SET data = ? WHERE sha256 = ?", (changed, sha))
    connection.close()


def exported(store: Store, name: str, file: Path) -> str:
    with transaction(store.read) as session:
        tape = get_tape(name, session=session)
        export_tape(tape, file, session=session)
        return tape_digest(tape.id, session=session)[0]


def test_import_refuses_a_changed_body_naming_the_exchange(store: Store, tmp_path: Path) -> None:
    fill(store, "orig", ADDRESSES, body=b"recorded body")
    file = tmp_path / "export.sqlite3"
    exported(store, "orig", file)
    flip_first_byte(file, sha256_hex(b"recorded body"))
    with pytest.raises(DamagedTape) as refused, transaction(store.write) as session:
        import_tape(file, "copy", session=session)
    message = str(refused.value)
    assert "exchange " in message and "GET https://a/x" in message and "occurrence" in message
    assert sha256_hex(b"recorded body") in message
    with transaction(store.read) as session:
        assert get_tape("copy", session=session) is None  # nothing of it stayed


def test_a_changed_body_changes_the_digest(store: Store, tmp_path: Path) -> None:
    fill(store, "orig", ADDRESSES, body=b"recorded body")
    file = tmp_path / "export.sqlite3"
    original = exported(store, "orig", file)
    standalone = open_store(f"sqlite:///{file}")
    try:
        with transaction(standalone.read) as session:
            (tape,) = list_tapes(session=session)
            assert tape_digest(tape.id, session=session)[0] == original
        flip_first_byte(file, sha256_hex(b"recorded body"))
        with transaction(standalone.read) as session:
            assert tape_digest(tape.id, session=session)[0] != original
    finally:
        standalone.dispose()


def test_a_missing_body_is_refused(store: Store, tmp_path: Path) -> None:
    fill(store, "orig", ADDRESSES, body=b"recorded body")
    file = tmp_path / "export.sqlite3"
    exported(store, "orig", file)
    with sqlite3.connect(file) as connection:
        connection.execute("DELETE FROM gh_blobs")
    connection.close()
    with pytest.raises(DamagedTape, match="is missing"), transaction(store.write) as session:
        import_tape(file, "copy", session=session)
