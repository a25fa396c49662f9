"""proxy/lease_shipping.py: a shipped batch leaves the pending list and is marked in the log, a
refusal is final (the lease is lost), a resolver that is away is asked again later, and hits
that must go before an ask are shipped first or the ask is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.leased_hits import BranchCopy
from engine.refs import BranchRef, TapeRef
from proxy.lease_log import LeaseLog
from proxy.lease_shipping import HeldBranch, Shipper
from proxy.resolver_client import ResolverGone, ResolverRejected, ResolverUnavailable


class FakeResolver:
    """Answers `ship_lease_events` with each of `outcomes` in turn (an exception is raised)."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.shipped: list[dict[str, Any]] = []

    async def ship_lease_events(self, payload: dict[str, Any]) -> dict[str, Any]:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        self.shipped.append(payload)
        return outcome

    async def renew_leases(self, payload: dict[str, Any], hold: float) -> dict[str, Any]:
        self.shipped.append(payload)
        return {"renewed": [], "revoke": [], "lost": []}


def held_branch() -> HeldBranch:
    tape = TapeRef(1, "t", 0, "groundhog", True, "closure", {})
    held = HeldBranch(epoch=3, copy=BranchCopy(tape, BranchRef(5, "root/a")))
    held.pending = [{"key_hash": "k", "occurrence": 0}, {"key_hash": "k", "occurrence": 1}]
    return held


def shipper(tmp_path: Path, resolver: FakeResolver, lost: list[HeldBranch]) -> Shipper:
    log = LeaseLog(tmp_path)
    return Shipper(lambda: resolver, "h", log, window=0.01, on_lost=lost.append)  # type: ignore[arg-type, return-value]


def test_a_shipped_batch_is_marked_and_a_refused_one_is_lost_for_good(tmp_path: Path) -> None:
    resolver = FakeResolver({"applied": 2}, ResolverRejected(409, [], b"lost"))
    lost: list[HeldBranch] = []
    ships = shipper(tmp_path, resolver, lost)
    held = held_branch()
    for event in held.pending:
        ships.log.append(held.lease, event)
    assert asyncio.run(ships.ship(held, release=True))
    assert held.pending == [] and ships.log.unshipped() == {}
    assert resolver.shipped[0]["release"] and resolver.shipped[0]["epoch"] == 3
    held.pending = [{"key_hash": "k", "occurrence": 2}]
    ships.log.append(held.lease, held.pending[0])
    assert not asyncio.run(ships.ship(held))
    assert lost == [held] and ships.log.unshipped() == {}


def test_a_resolver_that_is_away_is_asked_again(tmp_path: Path) -> None:
    resolver = FakeResolver(ResolverUnavailable("down"), {"applied": 2})
    ships = shipper(tmp_path, resolver, [])
    held = held_branch()

    async def ship_and_wait() -> None:
        assert await ships.ship(held)  # not lost: kept for the retry
        assert len(held.pending) == 2
        assert held.shipper is not None
        await held.shipper

    asyncio.run(ship_and_wait())
    assert held.pending == [] and len(resolver.shipped) == 1


def test_a_restart_ships_the_log_then_ends_the_holders_other_leases(tmp_path: Path) -> None:
    resolver = FakeResolver({"applied": 2})
    ships = shipper(tmp_path, resolver, [])
    held = held_branch()
    for event in held.pending:
        ships.log.append(held.lease, event)
    asyncio.run(ships.recover(5, restarted=True))
    shipped, released = resolver.shipped
    assert shipped["release"] and len(shipped["events"]) == 2
    assert released == {"holder": "h", "leases": [], "release_unlisted": True}
    assert ships.log.unshipped() == {}


def test_a_first_start_asks_the_resolver_nothing(tmp_path: Path) -> None:
    resolver = FakeResolver()
    asyncio.run(shipper(tmp_path, resolver, []).recover(5, restarted=False))
    assert resolver.shipped == []


def test_a_release_the_resolver_could_not_take_is_asked_again_as_a_release(
    tmp_path: Path,
) -> None:
    resolver = FakeResolver(ResolverUnavailable("restarting"), {"applied": 2, "released": True})
    ships = shipper(tmp_path, resolver, [])
    held = held_branch()

    async def release_and_wait() -> None:
        assert await ships.ship(held, release=True)
        assert held.shipper is not None
        await held.shipper

    asyncio.run(release_and_wait())
    (shipped,) = resolver.shipped
    assert shipped["release"] and len(shipped["events"]) == 2


def test_hits_are_shipped_before_an_ask_however_many_tries_it_takes(tmp_path: Path) -> None:
    # A replica died under the first two tries; the third reaches one that is up.
    resolver = FakeResolver(ResolverGone("reset"), ResolverGone("refused"), {"applied": 2})
    ships = shipper(tmp_path, resolver, [])
    held = held_branch()

    asyncio.run(ships.ship_first(held, patience=60))

    assert held.pending == [] and len(resolver.shipped) == 1


def test_an_ask_waits_for_the_hits_served_before_it_not_those_served_meanwhile(
    tmp_path: Path,
) -> None:
    """Siblings on a busy branch keep being served while the ask's hits are on their way:
    the ask goes on once its own are shipped (it used to chase them until a 503)."""
    held = held_branch()

    class Busy(FakeResolver):
        async def ship_lease_events(self, payload: dict[str, Any]) -> dict[str, Any]:
            held.pending.append({"key_hash": "k", "occurrence": 2})  # served meanwhile
            return await super().ship_lease_events(payload)

    resolver = Busy({"applied": 2}, {"applied": 1})
    ships = shipper(tmp_path, resolver, [])

    asyncio.run(ships.ship_first(held, patience=0.2))

    (shipped,) = resolver.shipped
    assert [event["occurrence"] for event in shipped["events"]] == [0, 1]
    assert held.pending == [{"key_hash": "k", "occurrence": 2}]  # shipped with its window


def test_an_ask_whose_hits_cannot_be_shipped_is_refused(tmp_path: Path) -> None:
    # Without this the ask would go on and be answered from counts that miss the two hits.
    resolver = FakeResolver(*[ResolverGone("refused")] * 10)
    ships = shipper(tmp_path, resolver, [])
    held = held_branch()

    with pytest.raises(ResolverUnavailable, match="could not ship the 2 hits"):
        asyncio.run(ships.ship_first(held, patience=0.2))

    assert len(held.pending) == 2 and resolver.shipped == []


class GatedResolver(FakeResolver):
    """Holds its first shipment until `gate` is set: a batch on its way to a slow resolver."""

    def __init__(self) -> None:
        super().__init__({"applied": 1}, {"applied": 1})
        self.sending = asyncio.Event()
        self.gate = asyncio.Event()

    async def ship_lease_events(self, payload: dict[str, Any]) -> dict[str, Any]:
        if not self.shipped:
            self.sending.set()
            await self.gate.wait()
        return await super().ship_lease_events(payload)


def test_a_hit_served_while_a_batch_is_on_its_way_is_shipped_after_it(tmp_path: Path) -> None:
    resolver = GatedResolver()
    ships = shipper(tmp_path, resolver, [])
    held = held_branch()
    held.pending = [{"key_hash": "k", "occurrence": 0}]

    async def serve_during_the_shipment() -> None:
        ships.soon(held)
        await resolver.sending.wait()
        # Served now, as proxy/held_branches.py serves a hit: no other hit comes after it.
        held.pending.append({"key_hash": "k", "occurrence": 1})
        ships.soon(held)
        resolver.gate.set()

        async def all_shipped() -> None:
            while held.pending:
                on_its_way = held.shipper
                assert on_its_way is not None and not on_its_way.done(), (
                    "a hit is left with nothing to ship it"
                )
                await on_its_way

        await asyncio.wait_for(all_shipped(), timeout=30)

    asyncio.run(serve_during_the_shipment())
    assert [len(batch["events"]) for batch in resolver.shipped] == [1, 1]
