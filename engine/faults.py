"""Faults shared by a group: which asks meet an injected failure, as a pure keyed function.

RL for tool-using agents trains robustness to failing tools; if each branch met its own random
failure, the failure would be noise in the group advantage again. A tape's `faults` rules give a
rate per host or route, and whether an ask fails is `H(world seed, rule, address) < rate` — the
address being (request key, occurrence, fingerprint) — so every branch that reaches the same
address meets the same fault, and recording the same workflow twice injects the same ones
(injected answers are not exchanges, so the digest does not move). A retry is the next
occurrence, a new address with its own draw. In `naive` mode addresses are private to a branch,
so there faults are independent per branch: the baseline the benchmark compares against.

Kinds: `429` and `503` answer with `Retry-After`; `timeout` holds the answer for `hold_ms` and
then answers `504` (a client whose own timeout is shorter sees a timeout); `reset` makes the
proxy close the client's connection without an answer; `latency` delays the ask by `latency_ms`
and then resolves it as usual. Every injected answer carries `X-Groundhog-Fault: <kind>` and the
decision `injected`; the world is never called for it.

Faults are not errors: an injected fault is an answer the tape chose to serve, and nothing here
raises. The engine's exceptions are engine/errors.py's.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.tape_settings import FaultKind, TapeSettings
from groundhog.protocol.headers import FAULT as FAULT_HEADER
from groundhog.protocol.problems import MEDIA_TYPE, problem_bytes
from groundhog.protocol.wire import HeaderPairs, WireResponse, wire_response

DRAW_VERSION = "groundhog-fault-v1"


@dataclass(frozen=True)
class FaultRule:
    kind: FaultKind
    rate: float
    host: str | None = None
    path: str | None = None  # an fnmatch pattern over the path: "/search", "/docs/*"
    methods: tuple[str, ...] = ()
    retry_after: int = 1
    hold_ms: int = 1000
    latency_ms: int = 200

    @classmethod
    def from_config(cls, raw: dict[str, Any]) -> FaultRule:
        return cls(
            kind=FaultKind(raw["kind"]),
            rate=float(raw["rate"]),
            host=raw.get("host"),
            path=raw.get("path"),
            methods=tuple(m.upper() for m in raw.get("methods") or ()),
            retry_after=int(raw.get("retry_after", 1)),
            hold_ms=int(raw.get("hold_ms", 1000)),
            latency_ms=int(raw.get("latency_ms", 200)),
        )

    def matches(self, method: str, host: str, path: str) -> bool:
        if self.host is not None and self.host.lower() != host:
            return False
        if self.methods and method.upper() not in self.methods:
            return False
        return self.path is None or fnmatch.fnmatchcase(path, self.path)


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    rule: FaultRule

    @property
    def replaces_answer(self) -> bool:
        return self.kind is not FaultKind.LATENCY

    @property
    def delay_ms(self) -> int:
        if self.kind is FaultKind.LATENCY:
            return self.rule.latency_ms
        if self.kind is FaultKind.TIMEOUT:
            return self.rule.hold_ms
        return 0


def draw(
    world_seed: int, rule_index: int, key_hash: str, occurrence: int, fingerprint: str
) -> float:
    """A uniform number in [0, 1), the same for everyone asking this address under this seed."""
    text = f"{DRAW_VERSION}|{world_seed}|{rule_index}|{key_hash}|{occurrence}|{fingerprint}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def decide_fault(
    rules: Sequence[FaultRule],
    *,
    world_seed: int,
    method: str,
    host: str,
    path: str,
    key_hash: str,
    occurrence: int,
    fingerprint: str,
) -> Fault | None:
    """The first matching rule decides (so rates of overlapping rules do not stack)."""
    for index, rule in enumerate(rules):
        if not rule.matches(method, host, path):
            continue
        if draw(world_seed, index, key_hash, occurrence, fingerprint) < rule.rate:
            return Fault(rule.kind, rule)
        return None
    return None


_STATUS = {
    FaultKind.TIMEOUT: (504, "Gateway timeout (injected)"),
    FaultKind.RESET: (502, "Connection reset (injected)"),
    FaultKind.TOO_MANY_REQUESTS: (429, "Too many requests (injected)"),
    FaultKind.UNAVAILABLE: (503, "Service unavailable (injected)"),
}


def injected_response(
    fault: Fault, *, tape: str, request_key: str, occurrence: int
) -> WireResponse:
    """The wire response of an injected fault: identical bytes for every branch at the address."""
    status, title = _STATUS[fault.kind]
    body = problem_bytes(
        status,
        f"injected-{fault.kind}",
        title,
        f"the tape's faults injected a {fault.kind} for this request (occurrence {occurrence}); "
        "the world was not called",
        tape=tape,
        request_key=request_key,
        occurrence=occurrence,
        fault=str(fault.kind),
    )
    headers: HeaderPairs = [["Content-Type", MEDIA_TYPE], [FAULT_HEADER, str(fault.kind)]]
    if fault.kind in (FaultKind.TOO_MANY_REQUESTS, FaultKind.UNAVAILABLE):
        headers.append(["Retry-After", str(fault.rule.retry_after)])
    return wire_response(status, headers, base64.b64encode(body).decode("ascii"))


def rules_of(settings: TapeSettings) -> list[FaultRule]:
    return [FaultRule.from_config(rule.model_dump()) for rule in settings.faults]
