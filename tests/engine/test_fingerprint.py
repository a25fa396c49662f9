"""Unit tests of versions and fingerprints."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.fingerprint import BASE_VERSION, bump_versions, fingerprint, next_version


def test_fingerprint_empty_until_a_dependency_is_written() -> None:
    assert fingerprint({"host:a"}, {}) == ""
    assert fingerprint({"host:a"}, {"host:b": "v"}) == ""  # irrelevant write
    assert fingerprint({"host:a"}, {"host:a": "v"}) != ""


def test_same_writes_give_same_versions_and_order_matters() -> None:
    one = bump_versions({}, {"doc:1"}, "k1", "b1")
    assert one == bump_versions({}, ["doc:1"], "k1", "b1")
    after_two = bump_versions(one, {"doc:1"}, "k2", "b2")
    other_order = bump_versions(bump_versions({}, {"doc:1"}, "k2", "b2"), {"doc:1"}, "k1", "b1")
    assert after_two != other_order
    assert next_version(BASE_VERSION, "k", "b") != next_version(BASE_VERSION, "k", "c")


def test_fingerprint_covers_only_read_resources() -> None:
    versions = {"doc:1": "a", "doc:2": "b"}
    assert fingerprint({"doc:1"}, versions) == fingerprint({"doc:1", "doc:3"}, versions)
    assert fingerprint({"doc:1"}, versions) != fingerprint({"doc:1", "doc:2"}, versions)


_resources = st.sets(st.sampled_from(["host:a", "host:b", "doc:1", "doc:2", "index:x"]))


@given(
    writes=st.lists(st.tuples(_resources, st.text(max_size=4), st.text(max_size=4)), max_size=6),
    reads=_resources,
)
def test_same_write_history_same_fingerprint_and_unwritten_reads_stay_empty(writes, reads) -> None:
    one: dict[str, str] = {}
    two: dict[str, str] = {}
    for resources, key, body in writes:
        one.update(bump_versions(one, resources, key, body))
        two.update(bump_versions(two, sorted(resources, reverse=True), key, body))
    assert one == two
    assert fingerprint(reads, one) == fingerprint(sorted(reads), two)
    written = set().union(*(resources for resources, _, _ in writes)) if writes else set()
    assert (fingerprint(reads, one) == "") == (not (reads & written))
