"""The digest covers content, not ids or arrival order."""

from __future__ import annotations

from store import exchanges
from store.branches import fork_branch, get_branch
from store.db import Store, transaction
from store.digest import tape_digest
from tests.store.test_exchanges import content
from tests.store.test_tapes import make_tape


def fill(store: Store, name: str, order: list[tuple[str, int, str]], body: bytes = b"x") -> int:
    tape_id = make_tape(store, name)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        fork_branch(root, "root/b0", {"n": 1}, session=session)
        sha = exchanges.put_blob(body, session=session)
        for key, occurrence, fingerprint in order:
            exchanges.insert_new_exchange(
                tape_id, key, occurrence, fingerprint, content(sha), session=session
            )
    return tape_id


ADDRESSES = [("a", 0, ""), ("b", 0, "naive:1"), ("a", 1, ""), ("b", 0, "f")]


def test_digest_ignores_ids_names_and_order(store: Store) -> None:
    first = fill(store, "one", ADDRESSES)
    second = fill(store, "two", list(reversed(ADDRESSES)))
    third = fill(store, "three", ADDRESSES, body=b"y")
    with transaction(store.read) as session:
        one = tape_digest(first, session=session)
        two = tape_digest(second, session=session)
        three = tape_digest(third, session=session)
    assert one == two and one[1] == 4
    assert three[0] != one[0]


def test_digest_covers_the_branch_tree(store: Store) -> None:
    first = fill(store, "one", ADDRESSES)
    second = fill(store, "two", ADDRESSES)
    with transaction(store.write) as session:
        root = get_branch(second, "root", session=session)
        fork_branch(root, "root/b1", {}, session=session)
    with transaction(store.read) as session:
        assert tape_digest(first, session=session) != tape_digest(second, session=session)
