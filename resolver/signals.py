"""Signals for trainers: per branch an exogenous digest, per fork its share and refetch rates.

A group-relative advantage is only noise-free if the group's rollouts saw the same outside
world. The exogenous digest makes that checkable: a running SHA-256 over the exogenous answers
a branch consumed since it was forked, in order. An answer is exogenous when it is a read whose
true fingerprint is empty (it did not depend on the branch's own writes) and it was served from
an address — `shared`, `recorded`, `simulated`, an upstream error on tape, or an `injected`
fault; `refetched`, `stale`, writes, passthrough and refusals are not. Each step folds the
request key hash, the occurrence and the answer's identity (status, headers and body hash, or
the error kind, or the decision for an injected fault), so two branches that consumed the same
answers in the same order hold the same digest, whichever recorded them. Per fork (a parent and
its children) the rates come from the report's counts. Pure functions: no HTTP, no SQL.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from store.signals import ConsumedAnswer

DIGEST_VERSION = "groundhog-exogenous-v1"
EMPTY_DIGEST = hashlib.sha256(DIGEST_VERSION.encode()).hexdigest()


def answer_identity(answer: ConsumedAnswer) -> str:
    """What the branch was served, independent of which row or branch recorded it."""
    if answer.error_kind is not None:
        return f"error:{answer.error_kind}"
    if answer.status is None:
        return f"unrecorded:{answer.decision}"
    headers = json.dumps(answer.headers or [], separators=(",", ":"), ensure_ascii=False)
    return f"{answer.status}:{hashlib.sha256(headers.encode()).hexdigest()}:{answer.body_sha}"


def fold(digest: str, key_hash: str, occurrence: int, identity: str) -> str:
    """One step of the running hash."""
    step = f"{digest}|{key_hash}|{occurrence}|{identity}"
    return hashlib.sha256(step.encode()).hexdigest()


def exogenous_digests(answers: Iterable[ConsumedAnswer]) -> dict[str, dict[str, Any]]:
    """Branch path -> {"digest", "answers"}, folding `answers` (ordered by branch, then seq)."""
    found: dict[str, dict[str, Any]] = {}
    for answer in answers:
        entry = found.setdefault(answer.branch, {"digest": EMPTY_DIGEST, "answers": 0})
        entry["digest"] = fold(
            entry["digest"], answer.key_hash, answer.occurrence, answer_identity(answer)
        )
        entry["answers"] += 1
    return found


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def branch_signals(counts: Mapping[str, Any]) -> dict[str, Any]:
    """Share and refetch rates of one branch's report counts (reads served, of all reads)."""
    decisions = counts.get("decisions", {})
    reads = counts.get("reads", 0)
    refetched = decisions.get("refetched", 0)
    return {
        "reads": reads,
        "shared": counts.get("reads_shared", 0),
        "refetched": refetched,
        "live_calls": counts.get("live_calls", 0),
        "share_rate": _rate(counts.get("reads_shared", 0), reads),
        "refetch_rate": _rate(refetched, reads),
    }


def fork_signals(
    branch_counts: Mapping[str, Mapping[str, Any]],
    parents: Mapping[str, str | None],
    digests: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Parent path -> the signals of the group of its children, summed over the children.

    `distinct_worlds` is how many different exogenous digests the children hold: 1 when every
    rollout of the group saw the same outside world.
    """
    groups: dict[str, list[str]] = {}
    for path, parent in parents.items():
        if parent is not None:
            groups.setdefault(parent, []).append(path)
    forks: dict[str, dict[str, Any]] = {}
    for parent, children in sorted(groups.items()):
        reads = shared = refetched = live = 0
        for child in children:
            signals = branch_signals(branch_counts.get(child, {}))
            reads += signals["reads"]
            shared += signals["shared"]
            refetched += signals["refetched"]
            live += signals["live_calls"]
        worlds = {digests.get(child, {}).get("digest", EMPTY_DIGEST) for child in children}
        forks[parent] = {
            "children": sorted(children),
            "reads": reads,
            "shared": shared,
            "refetched": refetched,
            "live_calls": live,
            "share_rate": _rate(shared, reads),
            "refetch_rate": _rate(refetched, reads),
            "distinct_worlds": len(worlds),
        }
    return forks


def summary(values: Iterable[float]) -> dict[str, float]:
    """min / mean / max of per-fork values: what Prometheus gets instead of one series per fork."""
    seen = list(values)
    if not seen:
        return {"min": 0.0, "mean": 0.0, "max": 0.0}
    return {"min": min(seen), "mean": sum(seen) / len(seen), "max": max(seen)}


def fork_rates_from_tallies(
    tallies: Iterable[tuple[Any, str, str, bool, int]], live_decisions: frozenset[str]
) -> list[dict[str, float]]:
    """Per fork (keyed by tape and parent) share rate, refetch rate and live calls.

    `tallies` are (tape, parent, decision, is_read, count) rows over the forked branches.
    """
    forks: dict[tuple[Any, str], dict[str, int]] = {}
    for tape, parent, decision, is_read, count in tallies:
        fork = forks.setdefault(
            (tape, parent), {"reads": 0, "shared": 0, "refetched": 0, "live": 0}
        )
        if is_read:
            fork["reads"] += count
            fork["shared"] += count if decision == "shared" else 0
        fork["refetched"] += count if decision == "refetched" else 0
        fork["live"] += count if decision in live_decisions else 0
    return [
        {
            "share_rate": _rate(fork["shared"], fork["reads"]),
            "refetch_rate": _rate(fork["refetched"], fork["reads"]),
            "live_calls": float(fork["live"]),
        }
        for _key, fork in sorted(forks.items())
    ]
