"""The tape report: decision counts per branch and in total, with the derived rates.

`lies` are reads served `stale` (replay mode answering a read this branch's own writes had
invalidated); `live_calls` are asks that went upstream; `upstream_failed` are live calls that
failed before the world answered (not recorded); `unrecorded` are live calls whose answer never
reached the tape (the record failed or never came), listed by event so a user can see which.
The benchmark's lie rate and live-call rows come from here, so the definitions live in one
pure function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from engine.policy import LIVE_DECISIONS, RECORDING_DECISIONS, Decision
from store.inspect import EventRow, Tally


class ReportView(StrEnum):
    """How much of the report to compute: `counts` is the decision counts and the unrecorded
    list only, for a caller that reads nothing else after every group (a trainer, the
    benchmark); `full` adds the signals, digests, contamination, redaction, protocols and costs,
    which read every answer of the tape."""

    FULL = "full"
    COUNTS = "counts"


def empty_counts() -> dict[str, Any]:
    return {
        "decisions": {},
        "reads": 0,
        "reads_shared": 0,
        "live_calls": 0,
        "upstream_errors": 0,
        "upstream_failed": 0,
        "unrecorded": 0,
        "passthrough": 0,
        "lies": 0,
        "lie_rate": 0.0,
    }


def _add(counts: dict[str, Any], tally: Tally) -> None:
    decisions = counts["decisions"]
    decisions[tally.decision] = decisions.get(tally.decision, 0) + tally.count
    live = tally.decision in LIVE_DECISIONS
    if tally.is_read:
        counts["reads"] += tally.count
        if tally.decision == Decision.SHARED:
            counts["reads_shared"] += tally.count
    if live:
        counts["live_calls"] += tally.count
    failed = tally.decision == Decision.UPSTREAM_FAILED
    if (live and tally.errored) or failed:
        counts["upstream_errors"] += tally.count
    if failed:
        counts["upstream_failed"] += tally.count
    if tally.unfinished and tally.decision in RECORDING_DECISIONS:
        counts["unrecorded"] += tally.count
    if tally.decision == Decision.PASSTHROUGH:
        counts["passthrough"] += tally.count
    if tally.decision == Decision.STALE:
        counts["lies"] += tally.count


def _finish(counts: dict[str, Any]) -> dict[str, Any]:
    counts["decisions"] = dict(sorted(counts["decisions"].items()))
    counts["lie_rate"] = counts["lies"] / counts["reads"] if counts["reads"] else 0.0
    return counts


def unrecorded_json(
    rows: Iterable[EventRow], invalidated: Mapping[int, list[str]] | None = None
) -> list[dict[str, Any]]:
    """The unrecorded live calls, each with its `kind` (`read`: the world answered, the record
    failed and the worker was told 503; `write`); a write's with the resources its intent left
    unknown in its branch (`invalidated`: every read of them there is refetched, never served
    the base)."""
    return [
        {
            "id": r.id,
            "seq": r.seq,
            "branch": r.branch,
            "method": r.method,
            "url": r.url,
            "decision": r.decision,
            "kind": "read" if r.is_read else "write",
            "invalidated": (invalidated or {}).get(r.id, []),
        }
        for r in rows
    ]


def build_report(
    tape: str,
    mode: str,
    branches: Iterable[str],
    tallies: Iterable[Tally],
    unrecorded: Iterable[EventRow] = (),
    invalidated: Mapping[int, list[str]] | None = None,
) -> dict[str, Any]:
    totals = empty_counts()
    per_branch = {path: empty_counts() for path in branches}
    for tally in tallies:
        _add(totals, tally)
        _add(per_branch.setdefault(tally.branch, empty_counts()), tally)
    return {
        "tape": tape,
        "mode": mode,
        "totals": _finish(totals),
        "branches": {path: _finish(counts) for path, counts in sorted(per_branch.items())},
        "unrecorded": unrecorded_json(unrecorded, invalidated),
    }
