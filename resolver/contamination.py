"""`possibly contaminated`: a shared read recorded after another branch's live write to its origin.

Fingerprints keep a branch's own writes out of its siblings' reads, but only the branch's own
lineage is known to the resolver. A world with one global state (one tool server for all
siblings, a shared database) lets a sibling's live write leak into the recording every other
branch is then served as `shared`, and nothing in the decisions says so. The oracle-free report
cannot tell whether it happened; it can say where it could have: a read recorded after a live
write to the same origin (scheme, host, port) by a branch outside the reader's lineage. Pure:
the report gathers the rows (store/contamination.py) and this decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from store.contamination import Asked

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit when it is the scheme's default."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or DEFAULT_PORTS.get(scheme)


@dataclass(frozen=True)
class Suspect:
    recording: Asked  # the read whose recording may hold another branch's write
    write: Asked  # the first live write, outside its lineage, to its origin before it


def in_lineage(write: Asked, reader: str, fork_points: Mapping[str, int]) -> bool:
    """Whether `write` is part of what branch `reader` itself had done (its own or inherited)."""
    if write.branch == reader:
        return True
    path = reader
    while "/" in path:
        parent = path.rsplit("/", 1)[0]
        if parent == write.branch:
            return write.seq <= fork_points[path]
        path = parent
    return False


def suspects(
    writes: Sequence[Asked], recordings: Sequence[Asked], fork_points: Mapping[str, int]
) -> list[Suspect]:
    """Recordings made after a live write to their origin by a branch not in their lineage."""
    by_origin: dict[tuple[str, str, int | None], list[Asked]] = {}
    for write in writes:
        by_origin.setdefault(origin(write.url), []).append(write)
    found: list[Suspect] = []
    for recording in recordings:
        for write in by_origin.get(origin(recording.url), ()):
            if write.id >= recording.id:
                break  # writes are in id order: the rest came later
            if not in_lineage(write, recording.branch, fork_points):
                found.append(Suspect(recording, write))
                break
    return found


def contamination_view(
    found: Sequence[Suspect], served: Mapping[tuple[str, int], int], *, listed: int
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Per branch, the reads served a suspect recording; and the first `listed` suspects."""
    per_branch: dict[str, int] = {}
    per_exchange: dict[int, int] = {}
    suspect_ids = {s.recording.exchange_id for s in found}
    for (branch, exchange_id), count in served.items():
        if exchange_id in suspect_ids:
            per_branch[branch] = per_branch.get(branch, 0) + count
            per_exchange[exchange_id] = per_exchange.get(exchange_id, 0) + count
    listing = [
        {
            "exchange_id": s.recording.exchange_id,
            "url": s.recording.url,
            "recorded_by": {"branch": s.recording.branch, "seq": s.recording.seq},
            "after_write": {
                "branch": s.write.branch,
                "seq": s.write.seq,
                "method": s.write.method,
                "url": s.write.url,
            },
            "served": per_exchange.get(s.recording.exchange_id or 0, 0),
        }
        for s in found[:listed]
    ]
    return per_branch, listing
