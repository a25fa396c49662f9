"""The cost report as a pure function: made and avoided per branch, group and host, priced."""

from __future__ import annotations

import pytest

from resolver.costs import cost_report
from store.costs import HostTally

PARENTS = {"root": None, "root/b0": "root", "root/b1": "root"}
TALLIES = [
    HostTally("root/b0", "recorded", "search.example", 3),
    HostTally("root/b0", "write", "docs.example", 1),
    HostTally("root/b1", "shared", "search.example", 3),
    HostTally("root/b1", "refused", "search.example", 2),  # neither made nor avoided
    HostTally("root/b1", "simulated", "free.example", 1),
]


def test_calls_made_and_avoided_are_counted_without_prices_and_cost_nothing_known() -> None:
    report = cost_report({}, TALLIES, PARENTS)
    assert report["priced"] is False and report["unpriced_hosts"] == []
    assert report["totals"] == {"live_calls": 4, "avoided": 4, "cost": None, "cost_avoided": None}
    assert report["branches"]["root"]["live_calls"] == 0
    assert report["groups"]["root"]["children"] == ["root/b0", "root/b1"]
    assert (report["groups"]["root"]["live_calls"], report["groups"]["root"]["avoided"]) == (4, 4)


def test_prices_per_host_give_the_cost_made_and_avoided_and_name_unpriced_hosts() -> None:
    report = cost_report({"search.example": 0.25, "docs.example": 1.0}, TALLIES, PARENTS)
    assert report["branches"]["root/b0"]["cost"] == pytest.approx(1.75)
    assert report["branches"]["root/b1"]["cost_avoided"] == pytest.approx(0.75)
    assert report["totals"]["cost"] == pytest.approx(1.75)
    assert report["totals"]["cost_avoided"] == pytest.approx(0.75)
    assert report["groups"]["root"]["cost_avoided"] == pytest.approx(0.75)
    assert report["hosts"]["search.example"] == {
        "live_calls": 3, "avoided": 3, "cost": 0.75, "cost_avoided": 0.75, "price": 0.25
    }  # fmt: skip
    assert report["unpriced_hosts"] == ["free.example"]
