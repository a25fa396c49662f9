"""Export to a standalone SQLite file and import into SQLite or PostgreSQL, digest intact."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.branches import get_branch
from store.counters import take_occurrence
from store.db import Store, open_store, transaction
from store.digest import tape_digest
from store.hints import get_hint, set_hint
from store.tapes import get_tape, list_tapes
from store.transfer import TransferError, export_tape, import_tape
from store.versions import branch_versions, set_versions
from tests.store.test_digest import ADDRESSES, fill


def test_round_trip_keeps_digest_and_branch_state(store: Store, tmp_path: Path) -> None:
    tape_id = fill(store, "orig", ADDRESSES)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        take_occurrence(root.id, "a", session=session)
        set_versions(root.id, {"host:a": "v"}, session=session)
        set_hint(tape_id, "a", "doc:1", "", session=session)
    file = tmp_path / "export.sqlite3"
    with transaction(store.read) as session:
        export_tape(get_tape("orig", session=session), file, session=session)
        original = tape_digest(tape_id, session=session)
    standalone = open_store(f"sqlite:///{file}")
    with transaction(standalone.read) as session:
        (tape,) = list_tapes(session=session)
        assert tape_digest(tape.id, session=session) == original
    standalone.dispose()
    with transaction(store.write) as session:
        copy = import_tape(file, "copy", session=session)
    with transaction(store.read) as session:
        assert tape_digest(copy.id, session=session) == original
        copy_root = get_branch(copy.id, "root", session=session)
        assert branch_versions(copy_root.id, session=session) == {"host:a": "v"}
        assert get_hint(copy.id, "a", session=session).reads == "doc:1"
    with pytest.raises(FileExistsError), transaction(store.write) as session:
        import_tape(file, "copy", session=session)


def test_import_rejects_files_that_are_not_exports(store: Store, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"definitely not sqlite" * 50)
    with pytest.raises(TransferError), transaction(store.write) as session:
        import_tape(garbage, None, session=session)
