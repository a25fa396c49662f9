"""resolver/advice.py: which write operations a tape's groups could have shared, and why not."""

from __future__ import annotations

from resolver.advice import advise, protocol_operation
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


def test_an_answer_that_created_something_is_a_write_whatever_the_siblings_sent() -> None:
    """A world whose every tool call is a POST has no read to show a write's effect: two
    siblings adding the same item to their carts sent one request, answered alike (issue 56)."""
    for status in (201, 202):
        writes = [_write("root/b0", status=status), _write("root/b1", status=status)]
        [item] = advise(writes, [])["operations"]
        assert not item["shareable"] and item["rule"] is None
        assert f"answered {status}: the request created something" in item["why_not"]


def test_a_protocol_operation_is_never_given_a_path_rule() -> None:
    """`POST /mcp` as a read would make every tool of the server a read: an MCP tool call is
    judged by its protocol and the tape's mcp_tools, and each operation is named on its own."""
    head = "v4 POST http://tools.test:8000/mcp op:mcp tools/call hold body:{}"
    hold = [
        WriteRow(b, "root", 1, "POST", "http://tools.test:8000/mcp", "k", 0, 200, b, head)
        for b in ("root/b0", "root/b1")
    ]
    other = head.replace("hold", "book")
    book = [
        WriteRow(
            "root/b0", "root", 2, "POST", "http://tools.test:8000/mcp", "k2", 0, 200, "x", other
        )
    ]
    advice = advise([*hold, *book], [])
    assert advice["rules"] == [] and advice["could_share"] == 0
    names = sorted(item["operation"] for item in advice["operations"])
    assert names == [
        "POST http://tools.test:8000/mcp (mcp tools/call book)",
        "POST http://tools.test:8000/mcp (mcp tools/call hold)",
    ]
    assert all("protocol operation" in item["why_not"] for item in advice["operations"])


def test_the_operation_is_read_from_the_keys_head() -> None:
    assert protocol_operation("v4 POST http://a/mcp op:mcp tools/call x headers:[] body:{}") == (
        "mcp tools/call x"
    )
    assert protocol_operation("v4 POST http://a/mcp op:graphql query Q") == "graphql query Q"
    assert protocol_operation('v4 POST http://a/search body:{"q":1}') is None
