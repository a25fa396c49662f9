"""The cost report: live calls made and avoided per tape, group and branch, and what they cost.

Sharing one recording across a group is only worth its trouble if it saves calls to paid APIs;
a user deciding on group size needs the calls made and avoided, and with a per-host price in the
tape's config (`prices`, per live call) the money. A call is *avoided* when an ask was answered
without the world: served from the tape (`shared`, `stale`, `replayed-write`) or made up by the
tape (`simulated`, `injected`). A *made* call is any live decision. `refused` is neither.
Pure: `resolver/tape_signals.py` gathers the tallies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.policy import LIVE_DECISIONS, Decision
from store.costs import HostTally

AVOIDED_DECISIONS = frozenset(
    {
        Decision.SHARED,
        Decision.STALE,
        Decision.REPLAYED_WRITE,
        Decision.SIMULATED,
        Decision.INJECTED,
    }
)


def _empty() -> dict[str, Any]:
    return {"live_calls": 0, "avoided": 0, "cost": 0.0, "cost_avoided": 0.0}


def _add(row: dict[str, Any], made: int, avoided: int, price: float) -> None:
    row["live_calls"] += made
    row["avoided"] += avoided
    row["cost"] += made * price
    row["cost_avoided"] += avoided * price


def _finish(row: dict[str, Any], priced: bool) -> dict[str, Any]:
    if not priced:
        row["cost"] = row["cost_avoided"] = None
    else:
        row["cost"], row["cost_avoided"] = round(row["cost"], 9), round(row["cost_avoided"], 9)
    return row


def cost_report(
    prices: Mapping[str, float],
    tallies: Iterable[HostTally],
    parents: Mapping[str, str | None],
) -> dict[str, Any]:
    """Per branch, per group (a fork: a parent's children) and in total; per host too."""
    priced = bool(prices)
    totals = _empty()
    branches = {path: _empty() for path in parents}
    hosts: dict[str, dict[str, Any]] = {}
    for tally in tallies:
        made = tally.count if tally.decision in LIVE_DECISIONS else 0
        avoided = tally.count if tally.decision in AVOIDED_DECISIONS else 0
        if not made and not avoided:
            continue
        price = prices.get(tally.host, 0.0)
        for row in (totals, branches.setdefault(tally.branch, _empty())):
            _add(row, made, avoided, price)
        host = hosts.setdefault(tally.host, {**_empty(), "price": prices.get(tally.host)})
        _add(host, made, avoided, price)
    groups: dict[str, dict[str, Any]] = {}
    for path, parent in sorted(parents.items()):
        if parent is None:
            continue
        group = groups.setdefault(parent, {"children": [], **_empty()})
        group["children"].append(path)
        counts = branches[path]
        for field in ("live_calls", "avoided", "cost", "cost_avoided"):
            group[field] += counts[field]
    return {
        "prices": dict(prices),
        "priced": priced,
        "unpriced_hosts": sorted(h for h in hosts if priced and h not in prices),
        "totals": _finish(totals, priced),
        "groups": {p: _finish(g, priced) for p, g in groups.items()},
        "branches": {p: _finish(b, priced) for p, b in sorted(branches.items())},
        "hosts": {h: _finish(v, priced) for h, v in sorted(hosts.items())},
    }
