"""Unit tests of the trainer signals: the exogenous digest and the per-fork rates."""

from __future__ import annotations

from engine.policy import LIVE_DECISIONS
from resolver.signals import (
    EMPTY_DIGEST,
    branch_signals,
    exogenous_digests,
    fork_rates_from_tallies,
    fork_signals,
    summary,
)
from store.signals import ConsumedAnswer


def consumed(
    branch: str,
    key_hash: str,
    occurrence: int,
    decision: str = "shared",
    status: int | None = 200,
    headers: list[list[str]] | None = None,
    body_sha: str | None = "body",
    error_kind: str | None = None,
) -> ConsumedAnswer:
    return ConsumedAnswer(
        branch, key_hash, occurrence, decision, status, headers, body_sha, error_kind
    )


def test_same_answers_in_the_same_order_give_the_same_digest_whoever_recorded() -> None:
    digests = exogenous_digests(
        [
            consumed("a", "k1", 0, "recorded"),
            consumed("a", "k2", 0),
            consumed("b", "k1", 0),
            consumed("b", "k2", 0, "simulated"),
        ]
    )
    assert digests["a"] == digests["b"] and digests["a"]["answers"] == 2
    assert digests["a"]["digest"] != EMPTY_DIGEST


def test_order_occurrence_and_content_each_change_the_digest() -> None:
    base = exogenous_digests([consumed("a", "k1", 0), consumed("a", "k2", 0)])["a"]["digest"]
    for other in (
        [consumed("a", "k2", 0), consumed("a", "k1", 0)],
        [consumed("a", "k1", 1), consumed("a", "k2", 0)],
        [consumed("a", "k1", 0, body_sha="other"), consumed("a", "k2", 0)],
        [consumed("a", "k1", 0, headers=[["X", "1"]]), consumed("a", "k2", 0)],
        [
            consumed("a", "k1", 0, status=None, body_sha=None, error_kind="timeout"),
            consumed("a", "k2", 0),
        ],
        [consumed("a", "k1", 0, "injected", None, None, None), consumed("a", "k2", 0)],
    ):
        assert exogenous_digests(other)["a"]["digest"] != base


def test_branch_and_fork_signals_sum_the_children() -> None:
    counts = {
        "root": {"reads": 9, "reads_shared": 0, "live_calls": 9, "decisions": {"recorded": 9}},
        "root/b0": {"reads": 4, "reads_shared": 3, "live_calls": 1, "decisions": {"refetched": 1}},
        "root/b1": {"reads": 4, "reads_shared": 4, "live_calls": 0, "decisions": {"shared": 4}},
    }
    assert branch_signals(counts["root/b0"]) == {
        "reads": 4,
        "shared": 3,
        "refetched": 1,
        "live_calls": 1,
        "share_rate": 0.75,
        "refetch_rate": 0.25,
    }
    parents = {"root": None, "root/b0": "root", "root/b1": "root"}
    digests = {"root/b0": {"digest": "x"}, "root/b1": {"digest": "x"}}
    forks = fork_signals(counts, parents, digests)
    assert forks == {
        "root": {
            "children": ["root/b0", "root/b1"],
            "reads": 8,
            "shared": 7,
            "refetched": 1,
            "live_calls": 1,
            "share_rate": 7 / 8,
            "refetch_rate": 1 / 8,
            "distinct_worlds": 1,
        }
    }
    assert (
        fork_signals(counts, parents, {"root/b0": {"digest": "y"}})["root"]["distinct_worlds"] == 2
    )
    assert branch_signals({})["share_rate"] == 0.0


def test_fork_rates_from_tallies_and_their_summary() -> None:
    live = frozenset(str(d) for d in LIVE_DECISIONS)
    rates = fork_rates_from_tallies(
        [
            (1, "root", "shared", True, 3),
            (1, "root", "refetched", True, 1),
            (1, "root", "write", False, 2),
            (2, "root", "recorded", True, 2),
        ],
        live,
    )
    assert rates == [
        {"share_rate": 0.75, "refetch_rate": 0.25, "live_calls": 3.0},
        {"share_rate": 0.0, "refetch_rate": 0.0, "live_calls": 2.0},
    ]
    assert summary(r["live_calls"] for r in rates) == {"min": 2.0, "mean": 2.5, "max": 3.0}
    assert summary([]) == {"min": 0.0, "mean": 0.0, "max": 0.0}
