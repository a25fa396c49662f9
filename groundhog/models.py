"""Typed results of the admin API (docs/internals.md, "The admin API shapes").

Callers get attributes with types instead of dictionaries whose keys they must remember; a
field the server adds later is kept in `extra` rather than breaking an older client.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Self


def _split(cls: type, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    names = {item.name for item in fields(cls)} - {"extra"}
    known = {key: value for key, value in data.items() if key in names}
    extra = {key: value for key, value in data.items() if key not in names}
    return known, extra


class _Extensible:
    """A result the server may add fields to: unknown keys are kept in ``extra``, not refused."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        known, extra = _split(cls, data)
        return cls(**known, extra=extra)


@dataclass(frozen=True)
class TapeInfo(_Extensible):
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
    redact_headers: list[str] = field(default_factory=list)
    redact_params: list[str] = field(default_factory=list)
    redact_json_paths: list[str] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BranchInfo(_Extensible):
    path: str
    parent: str | None
    children: list[str] = field(default_factory=list)
    fork_point: int | None = None
    events: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    shim_counters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        known, extra = _split(cls, data)
        known["shim_counters"] = known.get("shim_counters") or {}
        return cls(**known, extra=extra)


@dataclass(frozen=True)
class ForkResult:
    parent: str
    branches: list[str]


@dataclass(frozen=True)
class DecisionCounts(_Extensible):
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
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TapeReport:
    tape: str
    mode: str
    totals: DecisionCounts
    branches: dict[str, DecisionCounts]

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
        )


@dataclass(frozen=True)
class TapeDigest:
    tape: str
    digest: str
    exchanges: int


@dataclass(frozen=True)
class Event(_Extensible):
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
    extra: dict[str, Any] = field(default_factory=dict)
