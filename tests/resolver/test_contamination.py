"""`possibly contaminated` as pure functions: origins, lineages, which recordings are suspect."""

from __future__ import annotations

from resolver.contamination import contamination_view, in_lineage, origin, suspects
from store.contamination import Asked

FORKS = {"root/b0": 2, "root/b1": 2, "root/b1/x": 1}


def ask(id: int, branch: str, seq: int, url: str, method: str = "GET") -> Asked:
    return Asked(id, branch, seq, method, url, exchange_id=id)


def test_origin_makes_the_default_port_explicit_and_lowercases_the_host() -> None:
    assert origin("https://API.example.com/x") == ("https", "api.example.com", 443)
    assert origin("http://127.0.0.1:8001/a") == ("http", "127.0.0.1", 8001)
    assert origin("http://127.0.0.1:8001/a") != origin("http://127.0.0.1:8002/a")


def test_own_and_inherited_writes_are_in_the_lineage_a_siblings_and_later_parents_are_not() -> None:
    assert in_lineage(ask(1, "root/b1", 1, "u", "POST"), "root/b1/x", FORKS)
    assert in_lineage(ask(1, "root", 2, "u", "POST"), "root/b1", FORKS)
    assert not in_lineage(ask(1, "root", 3, "u", "POST"), "root/b1", FORKS)  # after the fork
    assert not in_lineage(ask(1, "root/b0", 1, "u", "POST"), "root/b1", FORKS)
    assert not in_lineage(ask(1, "root/b1/x", 1, "u", "POST"), "root/b1", FORKS)


def test_a_recording_after_a_siblings_write_to_its_origin_is_suspect_and_only_that() -> None:
    write = ask(10, "root/b0", 1, "http://w:1/doc", "POST")
    before = ask(5, "root/b1", 1, "http://w:1/doc")
    after = ask(11, "root/b1", 2, "http://w:1/doc")
    elsewhere = ask(12, "root/b1", 3, "http://w:2/doc")
    own = ask(13, "root/b0", 2, "http://w:1/doc")
    found = suspects([write], [before, after, elsewhere, own], FORKS)
    assert [(s.recording.id, s.write.id) for s in found] == [(11, 10)]
    per_branch, listing = contamination_view(
        found, {("root/b1", 11): 1, ("root/b0", 11): 1, ("root/b0", 13): 1}, listed=10
    )
    assert per_branch == {"root/b1": 1, "root/b0": 1}
    assert listing[0]["served"] == 2
    assert listing[0]["after_write"] == {
        "branch": "root/b0", "seq": 1, "method": "POST", "url": "http://w:1/doc"
    }  # fmt: skip
