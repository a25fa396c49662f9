"""What a resolve or a single-flight poll settles to: a `Resolution` or a `Waiting`.

The Resolver (resolver/resolution.py) returns these, the final steps (resolver/final_steps.py)
build them, and the internal routes (resolver/routes/internal.py) and benches read them. Kept
apart from the Resolver so the writers and readers of a result share its shape without each
importing the store transaction flow; without it the routes would reach into the resolve path
for two value types, and the final steps could not be separated from the Resolver without an
import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.asks import Ask
from engine.policy import Action, Decision
from groundhog.protocol.wire import WireResponse


@dataclass
class Resolution:
    """What `/v1/resolve` answers (see docs/internals.md)."""

    action: Action
    decision: Decision
    ask: Ask
    ticket: str | None = None
    response: WireResponse | None = None
    upstream_headers: list[list[str]] = field(default_factory=list)
    # `response` already encoded as JSON (a cached recording), so the reply need not re-encode it.
    response_json: bytes | None = None
    # How long the proxy holds the answer: a latency fault, or a timeout fault's hold.
    delay_ms: int = 0
    # The recording served, if one was: a branch-lease holder keeps it to serve again
    # (proxy/held_branches.py).
    exchange_id: int | None = None


@dataclass(frozen=True)
class Waiting:
    """Another asker holds the claim on this address; poll until it is recorded."""

    ask: Ask
    # The decision it will have if this asker ends up fetching (`recorded`, `refetched`,
    # `simulated`), as the decision path named it: the routes never re-derive it.
    decision: Decision
    # When the holder's claim lapses (wall time), if known: the next look worth taking.
    claim_expires: float | None = None
    # Which attempt it waits on (`facts.holder_of`): if that one fails, so does this ask.
    holder: str | None = None


def wants_simulator(result: Resolution | Waiting) -> bool:
    """A claimed `simulated` ask: its answer comes from the tape's simulator."""
    return (
        isinstance(result, Resolution)
        and result.decision is Decision.SIMULATED
        and result.action is Action.FORWARD
        and result.ticket is not None
    )
