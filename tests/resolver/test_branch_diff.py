"""The branch diff as a pure function: lineage segments, the first divergence, and why not."""

from __future__ import annotations

from resolver.branch_diff import NotShared, diff_branches, lineage_split
from store.inspect import EventRow, Segment


def row(branch: str, seq: int, key: str, *, occ: int = 0, fp: str = "", ex: int | None = None,
        read: bool = True, decision: str = "shared", method: str = "GET") -> EventRow:  # fmt: skip
    return EventRow(
        id=seq, seq=seq, branch=branch, method=method, url=f"http://w/{key}", key_hash=key,
        occurrence=occ, fingerprint=fp, decision=decision, exchange_id=ex, status=200,
        is_read=read,
    )  # fmt: skip


def test_siblings_share_the_parent_prefix_and_differ_after_it() -> None:
    split = lineage_split("root/b0", "root/b1", {"root": 0, "root/b0": 3, "root/b1": 3})
    assert split.common == "root"
    assert split.shared_events == 3
    assert split.a == [Segment("root/b0", 0, None)]
    assert split.b == [Segment("root/b1", 0, None)]


def test_a_parent_against_its_child_keeps_the_parents_events_after_the_fork() -> None:
    split = lineage_split("root", "root/b0", {"root": 0, "root/b0": 3})
    assert (split.common, split.shared_events) == ("root", 3)
    assert split.a == [Segment("root", 3, None)]
    assert split.b == [Segment("root/b0", 0, None)]


def test_siblings_forked_at_different_points_own_the_parent_events_between() -> None:
    fork_points = {"root": 0, "root/b0": 2, "root/b1": 5, "root/b1/x": 1}
    split = lineage_split("root/b0", "root/b1/x", fork_points)
    assert split.shared_events == 2
    assert split.a == [Segment("root/b0", 0, None)]
    assert split.b == [
        Segment("root", 2, 5),
        Segment("root/b1", 0, 1),
        Segment("root/b1/x", 0, None),
    ]


def test_a_write_splits_the_reads_after_it_and_names_the_write() -> None:
    split = lineage_split("root/b0", "root/b1", {"root": 0, "root/b0": 0, "root/b1": 0})
    tail_a = [
        row("root/b0", 1, "search", ex=1, decision="recorded"),
        row("root/b0", 2, "post-doc", ex=2, read=False, decision="write", method="POST"),
        row("root/b0", 3, "doc", fp="f1", ex=3, decision="refetched"),
        row("root/b0", 4, "search", occ=1, ex=5),
    ]
    tail_b = [
        row("root/b1", 1, "search", ex=1),
        row("root/b1", 2, "doc", ex=4, decision="recorded"),
    ]
    diff = diff_branches("root/b0", "root/b1", split, tail_a, tail_b)
    first = diff["first_divergence"]
    assert first["position"] == 1
    assert (first["a"]["key_hash"], first["b"]["key_hash"]) == ("post-doc", "doc")
    assert [(p["a"]["key_hash"], p["b"]["key_hash"]) for p in diff["reads_shared"]] == [
        ("search", "search")
    ]
    why = {(item["a"] or item["b"])["key_hash"]: item for item in diff["reads_not_shared"]}
    assert why["doc"]["why"] == NotShared.FINGERPRINT
    assert "root/b0 #2 POST http://w/post-doc" in why["doc"]["detail"]
    assert why["search"]["why"] == NotShared.OCCURRENCE
    assert why["search"]["b"] is None
    assert [w["event"]["key_hash"] for w in diff["writes"]] == ["post-doc"]
    assert diff["counts"]["why"] == {"fingerprint": 1, "occurrence": 1}


def test_a_request_only_one_branch_made_is_not_asked_and_identical_branches_do_not_diverge() -> (
    None
):
    split = lineage_split("root/b0", "root/b1", {"root": 0, "root/b0": 0, "root/b1": 0})
    same = [row("root/b0", 1, "k", ex=1)], [row("root/b1", 1, "k", ex=1)]
    diff = diff_branches("root/b0", "root/b1", split, *same)
    assert diff["first_divergence"] is None
    assert diff["first_different_answer"] is None
    assert diff["counts"]["reads_shared"] == 1
    extra = diff_branches(
        "root/b0", "root/b1", split, [*same[0], row("root/b0", 2, "only-a", ex=2)], same[1]
    )
    assert extra["first_divergence"]["b"] is None
    assert extra["reads_not_shared"][0]["why"] == NotShared.NOT_ASKED


def test_the_same_address_answered_live_for_each_is_not_shared_because_live() -> None:
    split = lineage_split("root/b0", "root/b1", {"root": 0, "root/b0": 0, "root/b1": 0})
    tail_a = [row("root/b0", 1, "k", ex=1, decision="passthrough")]
    tail_b = [row("root/b1", 1, "k", ex=2, decision="passthrough")]
    diff = diff_branches("root/b0", "root/b1", split, tail_a, tail_b)
    assert diff["reads_not_shared"][0]["why"] == NotShared.LIVE
    assert diff["first_different_answer"]["position"] == 0
