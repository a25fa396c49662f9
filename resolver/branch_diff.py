"""Where two branches diverged, and which reads they share and why the others are not shared.

A person who wants to know why two rollouts of a group got different rewards needs the first
request where they did something different, then every read: shared (one recording, the same
bytes) or not, and for each one not shared the reason — a write in one lineage changed its
fingerprint, the other branch asked that request a different number of times, the other never
asked it, or it went live for each (naive mode, passthrough). Writes are never shared: each
branch's own sandbox answers them. `lineage_split` says which parts of the two lineages to read
(their common prefix is the same events, not read at all) and `diff_branches` compares them;
both are pure, so the CLI, the API and the viewer agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from store.inspect import EventRow, Segment


class NotShared(StrEnum):
    FINGERPRINT = "fingerprint"  # same request and occurrence, different fingerprints
    OCCURRENCE = "occurrence"  # the other branch asked this request, not this many times
    NOT_ASKED = "not-asked"  # the other branch never asked this request
    LIVE = "live"  # same address, but each was answered live (naive mode, passthrough, …)
    WRITE = "write"  # a write: each branch's own sandbox answers it


@dataclass(frozen=True)
class LineageSplit:
    common: str  # the deepest branch both lineages run through
    shared_events: int  # events both inherit identically (the common prefix)
    a: list[Segment]  # what only A's lineage holds, in A's order
    b: list[Segment]


def _chain(path: str, fork_points: Mapping[str, int]) -> list[Segment]:
    """The segments of `path`'s lineage: each ancestor up to the fork point of the next."""
    parts = path.split("/")
    chain = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return [
        Segment(branch, 0, fork_points[chain[i + 1]] if i + 1 < len(chain) else None)
        for i, branch in enumerate(chain)
    ]


def lineage_split(a: str, b: str, fork_points: Mapping[str, int]) -> LineageSplit:
    """Which events of A's and B's lineages differ; `fork_points` maps a branch to its own."""
    chain_a, chain_b = _chain(a, fork_points), _chain(b, fork_points)
    shared = 0
    common = "root"
    index = 0
    while index < min(len(chain_a), len(chain_b)):
        seg_a, seg_b = chain_a[index], chain_b[index]
        if seg_a.branch != seg_b.branch:
            break
        common = seg_a.branch
        if seg_a.upto == seg_b.upto and seg_a.upto is not None:
            shared += seg_a.upto
            index += 1
            continue
        upto = min((u for u in (seg_a.upto, seg_b.upto) if u is not None), default=None)
        shared += upto or 0
        # Both lineages leave this branch at different points: each keeps its own rest of it.
        rest_a = [Segment(common, upto or 0, seg_a.upto)] if seg_a.upto != upto else []
        rest_b = [Segment(common, upto or 0, seg_b.upto)] if seg_b.upto != upto else []
        if upto is None:  # the same branch to its end: A and B are one branch
            rest_a = rest_b = []
        return LineageSplit(
            common, shared, rest_a + chain_a[index + 1 :], rest_b + chain_b[index + 1 :]
        )
    return LineageSplit(common, shared, chain_a[index:], chain_b[index:])


def _event(row: EventRow | None) -> dict[str, Any] | None:
    return None if row is None else asdict(row)


def _brief(row: EventRow) -> str:
    return f"{row.branch} #{row.seq} {row.method} {row.url}"


def _writes_before(tail: Sequence[EventRow], row: EventRow) -> list[str]:
    """The writes of a tail before `row`: what can have split its fingerprint from the other's."""
    writes: list[str] = []
    for event in tail:
        if (event.branch, event.seq) == (row.branch, row.seq):
            break
        if not event.is_read:
            writes.append(_brief(event))
    return writes


def _first_divergence(
    tail_a: Sequence[EventRow], tail_b: Sequence[EventRow]
) -> dict[str, Any] | None:
    """The first position where the two asked different requests (or one stopped asking)."""
    for index in range(max(len(tail_a), len(tail_b))):
        row_a = tail_a[index] if index < len(tail_a) else None
        row_b = tail_b[index] if index < len(tail_b) else None
        if row_a is None or row_b is None or row_a.key_hash != row_b.key_hash:
            return {"position": index, "a": _event(row_a), "b": _event(row_b)}
    return None


def _first_different_answer(
    tail_a: Sequence[EventRow], tail_b: Sequence[EventRow]
) -> dict[str, Any] | None:
    """The first position where both asked one request but were served different answers."""
    for index, (row_a, row_b) in enumerate(zip(tail_a, tail_b, strict=False)):
        if row_a.key_hash != row_b.key_hash:
            return None
        if row_a.exchange_id is None or row_a.exchange_id != row_b.exchange_id:
            return {"position": index, "a": _event(row_a), "b": _event(row_b)}
    return None


def _why(
    row_a: EventRow | None,
    row_b: EventRow | None,
    asked: Mapping[str, Counter[str]],
    tails: Mapping[str, Sequence[EventRow]],
) -> tuple[NotShared, str]:
    if row_a is not None and row_b is not None:
        if row_a.fingerprint != row_b.fingerprint:
            writes = [f"{side}: {w}" for side, row in (("A", row_a), ("B", row_b))
                      for w in _writes_before(tails[side], row)]  # fmt: skip
            named = "; ".join(writes) or "writes inherited before the fork"
            return NotShared.FINGERPRINT, f"fingerprints differ, split by {named}"
        return NotShared.LIVE, f"answered live for each ({row_a.decision} / {row_b.decision})"
    present = row_a if row_a is not None else row_b
    assert present is not None
    other = "B" if row_a is not None else "A"
    times = asked[other][present.key_hash]
    if times:
        return (
            NotShared.OCCURRENCE,
            f"{other} asked this request {times} time(s) since they split, "
            f"not occurrence {present.occurrence}",
        )
    return NotShared.NOT_ASKED, f"{other} never asked this request since they split"


def diff_branches(
    a: str,
    b: str,
    split: LineageSplit,
    tail_a: Sequence[EventRow],
    tail_b: Sequence[EventRow],
    *,
    truncated: bool = False,
) -> dict[str, Any]:
    """Compare what only A's lineage and only B's lineage were served (their tails)."""
    tails = {"A": tail_a, "B": tail_b}
    asked = {side: Counter(r.key_hash for r in tail) for side, tail in tails.items()}
    reads: dict[tuple[str, int], dict[str, EventRow]] = {}
    for side, tail in tails.items():
        for row in tail:
            if row.is_read:
                reads.setdefault((row.key_hash, row.occurrence), {}).setdefault(side, row)
    shared: list[dict[str, Any]] = []
    not_shared: list[dict[str, Any]] = []
    for pair in reads.values():
        row_a, row_b = pair.get("A"), pair.get("B")
        one_recording = row_a and row_b and row_a.exchange_id == row_b.exchange_id
        if one_recording and row_a and row_a.exchange_id is not None:
            shared.append({"a": _event(row_a), "b": _event(row_b)})
            continue
        why, detail = _why(row_a, row_b, asked, tails)
        not_shared.append({"a": _event(row_a), "b": _event(row_b), "why": why, "detail": detail})
    writes = [
        {"side": side, "event": _event(row), "why": NotShared.WRITE,
         "detail": "a write is answered by each branch's own sandbox, never shared"}
        for side, tail in tails.items() for row in tail if not row.is_read
    ]  # fmt: skip
    return {
        "a": a,
        "b": b,
        "common": split.common,
        "shared_prefix": split.shared_events,
        "events": {"a": len(tail_a), "b": len(tail_b)},
        "truncated": truncated,
        "first_divergence": _first_divergence(tail_a, tail_b),
        "first_different_answer": _first_different_answer(tail_a, tail_b),
        "reads_shared": shared,
        "reads_not_shared": not_shared,
        "writes": writes,
        "timelines": {"a": [_event(r) for r in tail_a], "b": [_event(r) for r in tail_b]},
        "counts": {
            "reads_shared": len(shared),
            "reads_not_shared": len(not_shared),
            "writes": len(writes),
            "why": dict(sorted(Counter(str(item["why"]) for item in not_shared).items())),
        },
    }
