"""Shipping a lease holder's served hits to the resolver: in batches, after a restart, for good.

The sidecar answers a leased branch's hits itself (proxy/held_branches.py) and writes each to its
log first (proxy/lease_log.py); this module gets them to the resolver's store, which counts them
as a resolve would have (`/v1/leases/events`). Hits wait one ship window for others to share
their batch; a resolver that is not there is asked again every half second (the hits stay in
the log meanwhile); a refusal (the lease was lost) is final and marked so. Before the resolver
is asked anything about the branch its hits must have shipped (`ship_first`), or the ask is not
made: the resolver would answer it from counts that miss them. A restarted proxy
ships what the log holds from its previous life before it serves anything. Without it the
resolver's counters would fall behind what the sidecar's worker was served.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine import failpoints
from engine.leased_hits import BranchCopy
from groundhog.protocol.wire import LeaseEventsAsk, LeaseHitEvent, LeaseRenewAsk
from proxy.lease_log import Lease, LeaseLog
from proxy.resolver_client import (
    ResolverClient,
    ResolverProtocolError,
    ResolverRejected,
    ResolverUnavailable,
    asked_again,
)

log = logging.getLogger(__name__)

# A resolver that could not take a batch is asked again this often.
RETRY_SECONDS = 0.5


@dataclass
class HeldBranch:
    """One leased branch: its copy, and the hits served from it not yet shipped."""

    epoch: int
    copy: BranchCopy
    # Keys whose count the copy cannot tell (a live read in flight, or one that failed): asked
    # of the resolver, whose answer tells it again.
    unknown: set[str] = field(default_factory=set)
    pending: list[LeaseHitEvent] = field(default_factory=list)
    # How many hits were served at this epoch: the next one's serial is one more.
    served: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    shipper: asyncio.Future[Any] | None = None
    # Whether the answers its siblings recorded elsewhere were asked for (`/v1/leases/ahead`).
    read_ahead: bool = False
    # The grant's digest of the branch's capability: a hit presenting another is the
    # resolver's to refuse (proxy/held_branches.py). None: the tape requires none.
    capability_digest: str | None = None

    @property
    def lease(self) -> Lease:
        return (self.copy.branch.id, self.epoch)

    def answered(self, key: str, occurrence: int) -> None:
        """The resolver answered `key` at `occurrence` (a served read, or one recorded through
        this sidecar): the branch's count of it is past that, and known again."""
        counts = self.copy.counts
        counts[key] = max(counts.get(key, 0), occurrence + 1)
        self.unknown.discard(key)


class Shipper:
    """Ships one holder's hits; `on_lost` hears of a branch whose lease the resolver refused."""

    def __init__(
        self,
        resolver: Callable[[], ResolverClient],
        holder: str,
        lease_log: LeaseLog,
        *,
        window: float,
        on_lost: Callable[[HeldBranch], None],
    ) -> None:
        self._resolver = resolver
        self.holder = holder
        self.log = lease_log
        # Served hits wait this long for others to share their shipment (a batch per window).
        self.window = window
        self._on_lost = on_lost

    def soon(self, held: HeldBranch) -> None:
        """Ship the branch's hits once the window has passed (one batch for all of them)."""
        if held.shipper is None or held.shipper.done():
            held.shipper = asyncio.ensure_future(self._after(self.window, held))

    def released_soon(self, held: HeldBranch) -> None:
        """Ship the branch's hits now and release its lease."""
        held.shipper = asyncio.ensure_future(self.ship(held, release=True))

    async def _after(self, seconds: float, held: HeldBranch, *, release: bool = False) -> None:
        await asyncio.sleep(seconds)
        await self.ship(held, release=release)

    async def ship(self, held: HeldBranch, *, release: bool = False) -> bool:
        """Ship the branch's served hits (and release the lease); False if it is lost."""
        async with held.lock:
            events = list(held.pending)
            if not events and not release:
                return True
            if release:
                failpoints.reach("proxy.lease.releasing")
            try:
                await self._send(held.lease, events, release=release)
                failpoints.reach("proxy.lease.batch_sent")
            except ResolverRejected as rejected:
                log.error(
                    "the resolver refused %d served hits of branch %s: %s",
                    len(events),
                    held.copy.branch.path,
                    rejected,
                )
                self._on_lost(held)
                self.log.shipped(held.lease, len(events))  # refused for good: not again
                return False
            except (ResolverUnavailable, ResolverProtocolError) as error:
                log.warning("could not ship %d served hits yet: %s", len(events), error)
                # A release asked again is a release: else the lease lingers unrenewed.
                retry = self._after(RETRY_SECONDS, held, release=release)
                held.shipper = asyncio.ensure_future(retry)
                return True
            del held.pending[: len(events)]
            self.log.shipped(held.lease, len(events))
            if held.pending and not release:
                self._next_batch(held)
            return True

    def _next_batch(self, held: HeldBranch) -> None:
        """Ship, after a window, the hits served while a batch was on its way: their `soon` found
        a shipper still running and left them to it, and that shipper took only what was
        pending when it started. Without this they waited for the branch's next hit, and the
        last hits of a worker that asked nothing more were never shipped."""
        running = held.shipper
        if running is None or running.done() or running is asyncio.current_task():
            held.shipper = asyncio.ensure_future(self._after(self.window, held))

    async def ship_first(self, held: HeldBranch, patience: float) -> None:
        """Ship the branch's served hits before the resolver is asked anything about it, asking
        again for up to `patience` seconds (as a resolve asks a resolver that is gone); raise
        `ResolverUnavailable` if they are still not shipped: the ask must not go without them.

        The resolver counts the branch's occurrences from what it was shipped, so an ask that
        reached it before the hits would be answered from counts that miss them: the worker
        would be served again an occurrence it was served already. Behind several replicas that
        is no corner case: with one replica dead, the shipment fails on a connection to it
        while the ask goes to the survivor on another; with every replica dead, the ask waits
        out its retry window and the first replica back can answer it before a failed batch's
        next retry (`ship` alone only schedules that retry)."""

        if not held.pending:
            return
        # Only the hits served before this ask are its to wait for. Hits its siblings on a busy
        # branch are served meanwhile are as concurrent with it as they would be a moment
        # later; waiting for them too, the ask chased a queue that refilled under load until
        # its patience ran out (a 503 the world did not cause: tests/reliability/test_soak.py).
        last_due = held.pending[-1]

        async def shipped() -> None:
            # `ship` is False when the lease is lost: the resolver fences the ask out itself.
            if await self.ship(held) and any(event is last_due for event in held.pending):
                raise ResolverUnavailable(
                    f"could not ship the {len(held.pending)} hits served locally on branch "
                    f"{held.copy.branch.path} before asking the resolver; nothing was asked"
                )

        await asked_again(shipped, patience)

    async def _send(self, lease: Lease, events: list[LeaseHitEvent], *, release: bool) -> None:
        branch_id, epoch = lease
        payload: LeaseEventsAsk = {
            "branch_id": branch_id,
            "holder": self.holder,
            "epoch": epoch,
            "events": events,
            "release": release,
        }
        await self._resolver().ship_lease_events(payload)

    async def recover(self, patience: float, *, restarted: bool) -> None:
        """Ship what the log holds from before a restart (its leases then released), then, if
        this holder had a life before, end its other leases (their copies died with it: a fork
        waiting on them goes on at once), asking a resolver that is not there yet again for up
        to `patience` seconds."""
        left: list[tuple[Lease | None, list[LeaseHitEvent]]] = [*self.log.unshipped().items()]
        if restarted:
            left.append((None, []))  # last: after the log's own leases are shipped
        give_up = time.monotonic() + patience
        while left:
            lease, events = left[0]
            try:
                if lease is None:
                    await self._release_unlisted()
                else:
                    await self._send(lease, events, release=True)
                    log.info("shipped %d hits served before a restart", len(events))
            except ResolverRejected as rejected:
                log.error("the resolver refused %d recovered hits: %s", len(events), rejected)
            except (ResolverUnavailable, ResolverProtocolError) as error:
                if time.monotonic() > give_up:
                    log.error("left %d unshipped leases in %s: %s", len(left), self.log.path, error)
                    return  # the log stays as it is: the next start ships it
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if lease is not None:
                self.log.shipped(lease, len(events))
            del left[0]
        self.log.recovered()

    async def _release_unlisted(self) -> None:
        payload: LeaseRenewAsk = {"holder": self.holder, "leases": [], "release_unlisted": True}
        await self._resolver().renew_leases(payload, 0)
