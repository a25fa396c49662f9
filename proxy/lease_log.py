"""The lease holder's local log: every hit it serves is written here before its bytes leave.

A sidecar that answers a leased branch's hits itself (proxy/held_branches.py) ships their
events to the resolver behind, in batches. Between serving and shipping, the events exist only
in the proxy; a proxy killed there would leave its branch's counters behind what its worker was
served, and the worker's next request would be given an occurrence again. So each event is
appended to this file first, with one `write` to an append-only descriptor: the bytes are then
in the kernel's page cache, which survives the proxy's process being killed (`kill -9`, an OOM
kill). A machine crash loses the page cache, and the worker with it: its rollout is gone too,
so nothing served to a surviving worker is lost. Shipped batches are marked, and a restarted
proxy ships what is unmarked before it serves (`unshipped`). No fsync: it would cost a disk
flush per hit, the very thing the lease removes.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from groundhog.protocol.wire import LeaseHitEvent

log = logging.getLogger(__name__)

LOG_NAME = "events.log"
HOLDER_NAME = "holder"
# The log is emptied when everything in it is shipped and it has grown past this.
COMPACT_BYTES = 4 * 1024 * 1024

Lease = tuple[int, int]  # (branch id, epoch)


def holder_id(directory: Path) -> str:
    """This proxy's holder id, kept in `directory` so a restarted proxy ships its own log."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / HOLDER_NAME
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    made = secrets.token_urlsafe(16)
    path.write_text(made + "\n")
    return made


class LeaseLog:
    """Append-only JSON lines: `{"lease": [branch, epoch], "event": …}` per served hit and
    `{"lease": [branch, epoch], "shipped": n}` once the resolver has applied n more of them."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / LOG_NAME
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._unshipped = 0

    def append(self, lease: Lease, event: LeaseHitEvent) -> None:
        """Write one served event (before the answer is sent)."""
        self._write({"lease": list(lease), "event": event})
        self._unshipped += 1

    def shipped(self, lease: Lease, count: int) -> None:
        self._write({"lease": list(lease), "shipped": count})
        self._unshipped -= count
        if self._unshipped <= 0 and os.fstat(self._fd).st_size > COMPACT_BYTES:
            os.ftruncate(self._fd, 0)
            self._unshipped = 0

    def _write(self, line: Mapping[str, Any]) -> None:
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        os.write(self._fd, data)  # one append: to the page cache, no flush

    def unshipped(self) -> dict[Lease, list[LeaseHitEvent]]:
        """The events the log holds that no batch marked shipped, per lease, in order served.

        A torn last line (the proxy died inside its write) was never acknowledged to a worker
        — the write precedes the answer — and is skipped."""
        served: dict[Lease, list[LeaseHitEvent]] = defaultdict(list)
        shipped: dict[Lease, int] = defaultdict(int)
        try:
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return {}
        for raw in lines:
            try:
                line = json.loads(raw)
                lease = (int(line["lease"][0]), int(line["lease"][1]))
            except (ValueError, KeyError, TypeError, IndexError):
                log.warning("skipping an unreadable line of %s", self.path)
                continue
            if "event" in line:
                # As it was written; one the resolver cannot read is refused when shipped.
                served[lease].append(cast(LeaseHitEvent, line["event"]))
            else:
                shipped[lease] += int(line.get("shipped", 0))
        left = {lease: events[shipped[lease] :] for lease, events in served.items()}
        return {lease: events for lease, events in left.items() if events}

    def recovered(self) -> None:
        """Everything the log held is shipped (or refused for good): start it afresh."""
        os.ftruncate(self._fd, 0)
        self._unshipped = 0

    def close(self) -> None:
        os.close(self._fd)
