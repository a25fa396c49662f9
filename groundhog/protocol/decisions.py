"""The decision words a worker sees and the actions the resolver tells the proxy to take.

`X-Groundhog-Decision` and the reports carry these words (DESIGN §4); the proxy, the resolver,
the benchmark and the client compare against them, so they are one StrEnum imported by all
(`engine.policy` re-exports them for the decision table).
"""

from __future__ import annotations

from enum import StrEnum


class Decision(StrEnum):
    SHARED = "shared"
    RECORDED = "recorded"
    REFETCHED = "refetched"
    STALE = "stale"
    WRITE = "write"
    REPLAYED_WRITE = "replayed-write"
    REFUSED = "refused"
    PASSTHROUGH = "passthrough"
    INJECTED = "injected"
    SIMULATED = "simulated"
    # The live call failed before the world answered (connect, TLS, timeout): nothing recorded.
    UPSTREAM_FAILED = "upstream-failed"


class Action(StrEnum):
    """What the proxy does with a resolve answer."""

    SERVE = "serve"
    FORWARD = "forward"
    WAIT = "wait"


# Decisions whose answer came from a live call rather than the tape.
FORWARD_DECISIONS = frozenset(
    {
        Decision.RECORDED,
        Decision.REFETCHED,
        Decision.WRITE,
        Decision.PASSTHROUGH,
        Decision.UPSTREAM_FAILED,
    }
)
