"""Key hints on SQLite and PostgreSQL: the first recording of a key's hint is kept."""

from __future__ import annotations

from store.db import Store, transaction
from store.hints import get_hint, set_hint
from tests.store.test_tapes import make_tape


def test_hints_keep_the_first_recording(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        set_hint(tape_id, "k", "doc:1", "", session=session)
        set_hint(tape_id, "k", "doc:2", "", session=session)
        assert get_hint(tape_id, "k", session=session).reads == "doc:1"
