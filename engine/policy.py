"""The decision table of DESIGN §4 as one pure function.

Given whether a request reads or writes, the tape's mode and online flag, the read's true
fingerprint and what the store holds, `decide` says whether to serve from tape or go live, which
decision word the worker sees, and at which address the answer lives. Keeping it free of HTTP
and SQL lets every cell of the table be tested directly; mixing it into the routes is how stale
bytes after a write would slip through.
"""

from __future__ import annotations

__all__ = ["Action", "Decision", "DependencyModel", "Mode"]

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from groundhog.protocol.decisions import FORWARD_DECISIONS, Action, Decision


class Mode(StrEnum):
    NAIVE = "naive"
    REPLAY = "replay"
    GROUNDHOG = "groundhog"


class DependencyModel(StrEnum):
    CLOSURE = "closure"
    PATH = "path"
    RULES = "rules"
    HINTS = "hints"


# Decisions answered by a live call (the protocol's forward set): one definition for all.
LIVE_DECISIONS = FORWARD_DECISIONS
# Live calls whose answer is meant to reach the tape; one without an exchange is unrecorded.
RECORDING_DECISIONS = frozenset({Decision.RECORDED, Decision.REFETCHED, Decision.WRITE})

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def naive_fingerprint(branch: str) -> str:
    """An address private to the branch, so the naive baseline never shares a read."""
    return "naive:" + hashlib.sha256(branch.encode()).hexdigest()[:16]


def lookup_fingerprint(*, mode: Mode, is_write: bool, true_fingerprint: str, branch: str) -> str:
    """The fingerprint of the address the resolver looks up (and records at) for this ask."""
    if is_write:
        return true_fingerprint
    if mode is Mode.NAIVE:
        return naive_fingerprint(branch)
    if mode is Mode.REPLAY:
        return ""
    return true_fingerprint


@dataclass(frozen=True)
class Outcome:
    action: Action
    decision: Decision


def decide(
    *,
    is_write: bool,
    mode: Mode,
    online: bool,
    true_fingerprint: str,
    branch: str,
    recorded: bool,
    passthrough: bool = False,
) -> Outcome:
    """What to do with one ask. `recorded`: an exchange exists at the lookup address."""
    address = lookup_fingerprint(
        mode=mode, is_write=is_write, true_fingerprint=true_fingerprint, branch=branch
    )
    if passthrough:
        if online:
            return Outcome(Action.FORWARD, Decision.PASSTHROUGH)
        return Outcome(Action.SERVE, Decision.REFUSED)
    if is_write:
        if online:
            return Outcome(Action.FORWARD, Decision.WRITE)
        if recorded:
            return Outcome(Action.SERVE, Decision.REPLAYED_WRITE)
        return Outcome(Action.SERVE, Decision.REFUSED)
    if mode is Mode.NAIVE:
        if online:
            return Outcome(Action.FORWARD, Decision.RECORDED)
        if recorded:
            return Outcome(Action.SERVE, Decision.SHARED)
        return Outcome(Action.SERVE, Decision.REFUSED)
    if recorded:
        lie = mode is Mode.REPLAY and true_fingerprint != ""
        return Outcome(Action.SERVE, Decision.STALE if lie else Decision.SHARED)
    if not online:
        return Outcome(Action.SERVE, Decision.REFUSED)
    if address == "":
        return Outcome(Action.FORWARD, Decision.RECORDED)
    return Outcome(Action.FORWARD, Decision.REFETCHED)
