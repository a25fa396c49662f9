"""Typed results of the admin API; the shapes live in `groundhog.protocol.admin`.

Kept as the client's import path (`from groundhog.models import TapeInfo`).
"""

from __future__ import annotations

from groundhog.protocol.admin import (
    BranchEvent,
    BranchInfo,
    BranchList,
    DecisionCounts,
    EventPage,
    ForkResult,
    TapeDigest,
    TapeInfo,
    TapeList,
    TapeReport,
)

# The client's earlier name for a branch event; `store.models.Event` is the stored row.
Event = BranchEvent

__all__ = [
    "BranchEvent",
    "BranchInfo",
    "BranchList",
    "DecisionCounts",
    "Event",
    "EventPage",
    "ForkResult",
    "TapeDigest",
    "TapeInfo",
    "TapeList",
    "TapeReport",
]
