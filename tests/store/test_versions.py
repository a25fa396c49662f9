"""Resource versions on SQLite and PostgreSQL: set per branch, the latest kept, read by name."""

from __future__ import annotations

from store.branches import fork_branch, get_branch
from store.db import Store, transaction
from store.versions import branch_versions, set_versions, versions_of
from tests.store.test_tapes import make_tape


def test_a_branch_keeps_its_latest_versions_and_reads_them_by_name(store: Store) -> None:
    tape_id = make_tape(store)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        assert root is not None
        other = fork_branch(root, "root/other", {}, session=session)
        set_versions(root.id, {"host:a": "v1", "host:b": "w"}, session=session)
        set_versions(root.id, {"host:a": "v2"}, session=session)
        set_versions(other.id, {"host:c": "x"}, session=session)
    many = {f"host:{index}" for index in range(70)} | {"host:a"}  # past the kept sizes
    with transaction(store.read) as session:
        assert branch_versions(root.id, session=session) == {"host:a": "v2", "host:b": "w"}
        assert versions_of(root.id, {"host:a", "host:c"}, session=session) == {"host:a": "v2"}
        assert versions_of(root.id, many, session=session) == {"host:a": "v2"}
        assert versions_of(root.id, set(), session=session) == {}
        assert branch_versions(other.id, session=session) == {"host:c": "x"}
