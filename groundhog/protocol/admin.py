"""The admin API's result shapes, declared once: the resolver's `response_model`s and the
Python client's typed results (docs/internals.md, "The admin API shapes").

They are standard-library dataclasses so the light worker install needs no pydantic; FastAPI
turns them into the OpenAPI schemas (docs/api.md) and validates each answer against them, so
a route that drifts from its shape fails its tests instead of surprising a client. A field a
newer server adds is kept by `from_json` in `extra` (not a dataclass field, so it is neither in
the schema nor in an answer) rather than breaking an older client.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Self


class Extensible:
    """A result the server may add fields to: unknown keys are kept in ``extra``, not refused."""

    @property
    def extra(self) -> dict[str, Any]:
        found: dict[str, Any] = self.__dict__.get("_extra", {})
        return found

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        names = {item.name for item in fields(cls)}  # type: ignore[arg-type]
        known = {key: value for key, value in data.items() if key in names}
        result = cls(**known)
        # Frozen dataclasses refuse attribute assignment; `extra` is no field of theirs.
        object.__setattr__(result, "_extra", {k: v for k, v in data.items() if k not in names})
        return result


@dataclass(frozen=True)
class TapeInfo(Extensible):
    """A tape: its identity, its behaviour (`POST /v1/tapes` body) and its size."""

    name: str
    world_seed: int
    mode: str
    online: bool
    dependency_model: str
    exchanges: int = 0
    branches: int = 1
    ignore_params: list[str] = field(default_factory=list)
    match_headers: list[str] = field(default_factory=list)
    cooperative_hosts: list[str] = field(default_factory=list)
    passthrough_hosts: list[str] = field(default_factory=list)
    toolchain_passthrough: bool = True
    redact_headers: list[str] = field(default_factory=list)
    redact_params: list[str] = field(default_factory=list)
    redact_json_paths: list[str] = field(default_factory=list)
    redact_patterns: list[str] = field(default_factory=list)
    redact_keep: list[str] = field(default_factory=list)
    redact_disable: list[str] = field(default_factory=list)
    interchangeable_credentials: list[str] | str = field(default_factory=list)
    ignore_headers: list[str] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    simulator_url: str | None = None
    simulate_writes: bool = False
    record_transport_failures: bool = False
    prices: dict[str, float] = field(default_factory=dict)
    allow_metadata_addresses: bool = False
    protocols: dict[str, str] = field(default_factory=dict)
    mcp_tools: dict[str, str] = field(default_factory=dict)
    sandbox_headers: list[str] = field(default_factory=list)
    sandbox_cookies: list[str] = field(default_factory=list)
    # How the tape applies the shipped tool catalog (`groundhog catalog`); {} before it existed.
    catalog: dict[str, Any] = field(default_factory=dict)
    # `required` or `optional`; None: the deployment's default (docs/reliability.md).
    branch_capabilities: str | None = None
    websocket_replay_client_messages: bool = False


@dataclass(frozen=True)
class TapeList:
    tapes: list[TapeInfo]


@dataclass(frozen=True)
class BranchInfo(Extensible):
    """A branch, with its share signals when the route computes them."""

    path: str
    parent: str | None
    children: list[str] = field(default_factory=list)
    fork_point: int | None = None
    events: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    shim_counters: dict[str, Any] = field(default_factory=dict)
    exogenous_digest: str | None = None
    exogenous_answers: int | None = None
    signals: dict[str, Any] | None = None
    fork: dict[str, Any] | None = None
    # What a worker of this branch presents to the proxy (the single branch view only).
    capability: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return super().from_json({**data, "shim_counters": data.get("shim_counters") or {}})


@dataclass(frozen=True)
class BranchList:
    branches: list[BranchInfo]


@dataclass(frozen=True)
class ForkResult:
    parent: str
    branches: list[str]
    # What the fork cannot make true, said once (e.g. the parent already had children, whose
    # recordings the new ones will be served where they ask alike).
    warnings: list[str] = field(default_factory=list)
    # Each new branch's capability, by path: what its worker presents to the proxy.
    capabilities: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DecisionCounts(Extensible):
    decisions: dict[str, int] = field(default_factory=dict)
    reads: int = 0
    reads_shared: int = 0
    live_calls: int = 0
    upstream_errors: int = 0
    upstream_failed: int = 0
    unrecorded: int = 0
    passthrough: int = 0
    lies: int = 0
    lie_rate: float = 0.0
    # Reads served a recording made after a live write to their origin by a branch outside
    # their lineage: a world with global state may have leaked that write (resolver/contamination).
    possibly_contaminated: int = 0


@dataclass(frozen=True)
class TapeReport:
    """The client's view of `GET /v1/tapes/{tape}/report` (the answer carries more)."""

    tape: str
    mode: str
    totals: DecisionCounts
    branches: dict[str, DecisionCounts]
    # The cost report: live calls made and avoided per branch, group and host, priced by the
    # tape's `prices` (costs None when it has none). Empty from a resolver that predates it.
    costs: dict[str, Any] = field(default_factory=dict)
    # The advisor (resolver/advice.py): write operations the groups could have shared, with
    # evidence and rules. Empty from a resolver that predates it, or from a counts-only report.
    advice: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return cls(
            tape=data["tape"],
            mode=data["mode"],
            totals=DecisionCounts.from_json(data.get("totals") or {}),
            branches={
                path: DecisionCounts.from_json(counts)
                for path, counts in (data.get("branches") or {}).items()
            },
            costs=dict(data.get("costs") or {}),
            advice=dict(data.get("advice") or {}),
        )


@dataclass(frozen=True)
class TapeDigest:
    tape: str
    digest: str
    exchanges: int


@dataclass(frozen=True)
class BranchEvent(Extensible):
    """One answer a branch was served (`GET /v1/tapes/{tape}/events`)."""

    seq: int
    branch: str
    method: str
    url: str
    request_key: str
    occurrence: int
    fingerprint: str
    decision: str
    exchange_id: int | None = None
    status: int | None = None
    id: int | None = None


@dataclass(frozen=True)
class EventPage:
    events: list[BranchEvent]
    next_after: int | None = None
