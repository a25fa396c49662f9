"""resolver/advice.py: which write operations a tape's groups could have shared, and why not."""

from __future__ import annotations

from resolver.advice import advise
from store.sibling_writes import RefetchedRead, WriteRow

SEARCH = "http://tools.test:8000/search"


def _write(branch: str, key: str = "k1", status: int = 200, seq: int = 1, url: str = SEARCH):
    return WriteRow(branch, "root", seq, "POST", url, key, 0, status, f"body-{branch}")


def test_identical_sibling_requests_answered_alike_are_shareable_with_their_rule() -> None:
    advice = advise([_write("root/b0"), _write("root/b1"), _write("root/b2")], [])
    [item] = advice["operations"]
    assert item["shareable"] and item["could_share"] == 2 and advice["could_share"] == 2
    assert item["rule"] == {
        "method": "POST",
        "host": "tools.test",
        "path": "/search",
        "reads": ["origin:http://tools.test:8000"],
    }
    assert "3 distinct bodies" in item["evidence"][1]  # the world's noise, not a difference
    assert advice["rules"] == [item["rule"]]


def test_each_branchs_own_request_is_no_evidence() -> None:
    [item] = advise([_write("root/b0", "k1"), _write("root/b1", "k2")], [])["operations"]
    assert not item["shareable"] and item["rule"] is None and item["could_share"] == 0
    assert "no two siblings" in item["why_not"]


def test_siblings_answered_with_different_statuses_are_not_shareable() -> None:
    writes = [_write("root/b0", status=200), _write("root/b1", status=409)]
    [item] = advise(writes, [])["operations"]
    assert not item["shareable"] and "different statuses" in item["why_not"]


def test_a_later_read_that_changed_is_charged_to_the_write_before_it() -> None:
    writes = [_write("root/b0"), _write("root/b1")]
    changed = RefetchedRead("root/b0", 5, "http://tools.test:8000/list", "after", "before")
    unchanged = RefetchedRead("root/b1", 5, "http://tools.test:8000/list", "same", "same")
    [item] = advise(writes, [changed, unchanged])["operations"]
    assert not item["shareable"] and "root/b0 #5" in item["why_not"]
    [clean] = advise(writes, [unchanged])["operations"]
    assert clean["shareable"]
    # A read of another origin, or before the write, is not the write's doing.
    other = RefetchedRead("root/b0", 5, "http://elsewhere.test/list", "after", "before")
    earlier = RefetchedRead("root/b0", 0, "http://tools.test:8000/list", "after", "before")
    assert advise(writes, [other, earlier])["operations"][0]["shareable"]
