"""A remembered draft is the draft `draft_ask` would make, for every branch that asks alike,
and only while the tape it was drafted for is the same."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from engine.asks import draft_ask
from engine.draft_memo import DraftMemo
from engine.refs import BranchRef, TapeRef
from engine.resolve_request import ResolveRequest

KEY = b"k" * 32
TAPE = TapeRef(7, "t", 1, "groundhog", True, "closure", {})


def wire(path: str = "/x", **fields: object) -> ResolveRequest:
    return ResolveRequest.model_validate(
        {"tape": "t", "branch": "root/a", "method": "GET", "host": "api.test", "port": 443}
        | {"scheme": "https", "path": path, "headers": [["authorization", "Bearer s3cr3t-abc"]]}
        | fields
    )


def test_a_remembered_draft_is_the_fresh_draft_for_each_branch() -> None:
    drafts = DraftMemo()
    for index, path in enumerate(("root/a", "root/b", "root")):
        branch = BranchRef(index + 1, path)
        remembered = drafts(TAPE, branch, wire(), b"", redaction_key=KEY)
        assert remembered == draft_ask(TAPE, branch, wire(), b"", redaction_key=KEY)
        assert remembered.branch == branch
    assert len(drafts._drafts) == 1


def test_what_changes_the_draft_is_not_served_a_remembered_one() -> None:
    drafts = DraftMemo()
    branch = BranchRef(1, "root/a")
    asked = wire(headers=[["x-variant", "2"]])
    first = drafts(TAPE, branch, asked, b"", redaction_key=KEY)
    # Another configuration of the same tape (made anew under its name, say) keys by a header.
    keyed = replace(TAPE, config={"match_headers": ["x-variant"]})
    assert drafts(keyed, branch, asked, b"", redaction_key=KEY).key != first.key
    assert drafts(keyed, branch, asked, b"", redaction_key=KEY) == draft_ask(
        keyed, branch, asked, b"", redaction_key=KEY
    )
    # Another redaction key keys the credential's placeholder anew.
    plain = drafts(TAPE, branch, wire(), b"", redaction_key=KEY)
    other = drafts(TAPE, branch, wire(), b"", redaction_key=b"o" * 32)
    assert other == draft_ask(TAPE, branch, wire(), b"", redaction_key=b"o" * 32)
    assert other.key != plain.key
    # Another body, query or method is another request.
    posted = drafts(TAPE, branch, wire(method="POST"), b"{}", redaction_key=KEY)
    assert posted.key != plain.key


def test_it_is_bounded_and_keeps_no_large_body() -> None:
    drafts = DraftMemo(limit=2, body_bytes=4)
    branch = BranchRef(1, "root/a")
    for path in ("/1", "/2", "/1", "/3"):  # /1 used again: /2 is the least recently used
        drafts(TAPE, branch, wire(path), b"", redaction_key=KEY)
    assert [memo[5] for memo in drafts._drafts] == ["/1", "/3"]
    large = drafts(TAPE, branch, wire("/4", method="POST"), b"12345", redaction_key=KEY)
    assert large == draft_ask(TAPE, branch, wire("/4", method="POST"), b"12345", redaction_key=KEY)
    assert len(drafts._drafts) == 2


def test_threads_share_one_memo() -> None:
    drafts = DraftMemo(limit=3)  # evicting all the time, from eight threads at once

    def ask(index: int) -> bool:
        branch = BranchRef(index, f"root/b{index}")
        asked = wire(f"/{index % 5}")
        return drafts(TAPE, branch, asked, b"", redaction_key=KEY) == draft_ask(
            TAPE, branch, asked, b"", redaction_key=KEY
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(ask, range(400)))
    assert len(drafts._drafts) <= 3
