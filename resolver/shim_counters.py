"""How a branch's stored shim counters absorb a worker's report without ever going back.

Several processes may run as one branch (a worker restarted, two nodes of one rollout) and report
their counters in any order. Taking the larger count per channel and the later clock means a
process that resumes from the store never repeats a uuid4 nor sees its clock go back, whichever
report arrived last. A pure function, so the rule is tested without HTTP or a database.
"""

from __future__ import annotations

from typing import Any

from resolver.errors import ResolverError


class CountersMismatch(ResolverError, ValueError):
    """The report belongs to another world (seed) or another counters format."""


def merge_counters(stored: dict[str, Any], reported: dict[str, Any]) -> dict[str, Any]:
    """The counters to store after `reported` arrives on top of `stored`."""
    if not stored:
        return dict(reported)
    for field in ("version", "world_seed", "epoch_ns", "tick_ns"):
        if field in stored and field in reported and stored[field] != reported[field]:
            raise CountersMismatch(
                f"reported shim counters have {field}={reported[field]!r}, "
                f"the branch's stored counters {field}={stored[field]!r}"
            )
    newer = reported if reported.get("clock_ns", 0) >= stored.get("clock_ns", 0) else stored
    occurrences = dict(stored.get("occurrences") or {})
    for channel, count in (reported.get("occurrences") or {}).items():
        occurrences[channel] = max(count, occurrences.get(channel, 0))
    return {
        **stored,
        **newer,
        "clock_ns": max(stored.get("clock_ns", 0), reported.get("clock_ns", 0)),
        "occurrences": occurrences,
    }
