"""Forking on SQLite and PostgreSQL: a child starts with its parent's counters and versions."""

from __future__ import annotations

from store.branches import child_paths, fork_branch, get_branch
from store.counters import take_event_seq, take_occurrence
from store.db import Store, transaction
from store.versions import branch_versions, set_versions, versions_of
from tests.store.test_tapes import make_tape


def test_fork_copies_counters_and_versions(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        take_occurrence(root.id, "k", session=session)
        set_versions(root.id, {"host:a": "v1"}, session=session)
        take_event_seq(root.id, session=session)
        session.refresh(root)
        child = fork_branch(root, "root/b0", {"random": 2}, session=session)
        assert child.fork_point == 1 and child.parent_path == "root"
        assert take_occurrence(child.id, "k", session=session) == 1
        assert branch_versions(child.id, session=session) == {"host:a": "v1"}
        set_versions(child.id, {"host:a": "v2", "host:b": "w"}, session=session)
        # The parent is unaffected by the child's later state.
        assert branch_versions(root.id, session=session) == {"host:a": "v1"}
        assert take_occurrence(root.id, "k", session=session) == 1
        assert versions_of(child.id, {"host:b", "host:z"}, session=session) == {"host:b": "w"}
        assert child_paths(tape_id, "root", session=session) == ["root/b0"]
