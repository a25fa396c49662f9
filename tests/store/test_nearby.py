"""Near-miss candidates: same host first, else same method, bounded, on both databases."""

from __future__ import annotations

from dataclasses import replace

from store import exchanges, nearby
from store.db import Store, transaction
from tests.store.test_exchanges import content
from tests.store.test_tapes import make_tape


def _record(
    store: Store, tape_id: int, key: str, occurrence: int, fingerprint: str, **fields: str
) -> None:
    with transaction(store.write) as session:
        sha = exchanges.put_blob(b"body", session=session)
        recorded = replace(content(sha), key_readable=key, **fields)
        exchanges.insert_new_exchange(
            tape_id, f"hash-{key}", occurrence, fingerprint, recorded, session=session
        )


def test_candidates_on_the_same_host_with_every_address(store: Store) -> None:
    tape_id = make_tape(store)
    _record(store, tape_id, "GET a/x", 0, "", request_host="a")
    _record(store, tape_id, "GET a/x", 1, "fp", request_host="a")
    _record(store, tape_id, "POST a/y", 0, "", request_host="a", request_method="POST")
    _record(store, tape_id, "GET b/z", 0, "", request_host="b")
    with transaction(store.read) as session:
        found = nearby.recorded_addresses(tape_id, "GET", "a", session=session)
    assert {key: sorted(addresses) for key, addresses in found.items()} == {
        "GET a/x": [(0, ""), (1, "fp")],
        "POST a/y": [(0, "")],
    }


def test_an_unknown_host_falls_back_to_the_same_method_then_to_nothing(store: Store) -> None:
    tape_id = make_tape(store)
    _record(store, tape_id, "GET a/x", 0, "", request_host="a")
    _record(store, tape_id, "POST b/y", 0, "", request_host="b", request_method="POST")
    with transaction(store.read) as session:
        by_method = nearby.recorded_addresses(tape_id, "POST", "elsewhere", session=session)
        nothing = nearby.recorded_addresses(tape_id, "PUT", "elsewhere", session=session)
        other_tape = nearby.recorded_addresses(tape_id + 1000, "GET", "a", session=session)
    assert by_method == {"POST b/y": [(0, "")]}
    assert nothing == {} and other_tape == {}


def test_the_scan_is_bounded(store: Store) -> None:
    tape_id = make_tape(store)
    for index in range(5):
        _record(store, tape_id, f"GET a/{index}", 0, "", request_host="a")
    with transaction(store.read) as session:
        found = nearby.recorded_addresses(tape_id, "GET", "a", session=session, limit=3)
    assert sum(len(addresses) for addresses in found.values()) == 3


def test_readable_key_names_any_recording_of_a_hash(store: Store) -> None:
    tape_id = make_tape(store)
    _record(store, tape_id, "GET a/x", 2, "fp", request_host="a")
    with transaction(store.read) as session:
        assert nearby.readable_key(tape_id, "hash-GET a/x", session=session) == "GET a/x"
        assert nearby.readable_key(tape_id, "hash-missing", session=session) is None
