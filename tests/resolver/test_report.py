"""Unit tests of the report's counting rules."""

from __future__ import annotations

from resolver.report import build_report
from store.inspect import Tally


def test_report_counts_and_rates() -> None:
    tallies = [
        Tally("root/b0", "recorded", True, False, 2),
        Tally("root/b0", "recorded", True, True, 1),
        Tally("root/b1", "shared", True, False, 3),
        Tally("root/b1", "stale", True, False, 1),
        Tally("root/b1", "write", False, False, 1),
        Tally("root/b1", "passthrough", True, False, 1),
    ]
    report = build_report("t", "replay", ["root", "root/b0", "root/b1"], tallies)
    totals = report["totals"]
    assert totals["decisions"] == {
        "passthrough": 1,
        "recorded": 3,
        "shared": 3,
        "stale": 1,
        "write": 1,
    }
    assert totals["reads"] == 8 and totals["reads_shared"] == 3
    assert totals["live_calls"] == 5 and totals["upstream_errors"] == 1
    assert totals["passthrough"] == 1 and totals["lies"] == 1
    assert totals["lie_rate"] == 1 / 8
    assert report["branches"]["root"]["reads"] == 0
    assert report["branches"]["root/b1"]["lie_rate"] == 1 / 5


def test_upstream_failures_and_unrecorded_live_calls_are_counted() -> None:
    tallies = [
        Tally("root", "upstream-failed", True, False, 2, unfinished=True),
        Tally("root", "write", False, False, 1, unfinished=True),
        Tally("root", "recorded", True, False, 1, unfinished=True),
        Tally("root", "passthrough", True, False, 4, unfinished=True),  # never recorded anyway
        Tally("root", "refused", True, False, 1, unfinished=True),
    ]
    totals = build_report("t", "groundhog", ["root"], tallies)["totals"]
    assert totals["upstream_failed"] == 2 and totals["upstream_errors"] == 2
    assert totals["unrecorded"] == 2
    assert totals["live_calls"] == 8
