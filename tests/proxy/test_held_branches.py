"""proxy/held_branches.py under mitmproxy's test context: leases are on by default where the
proxy has a directory for their log, a resolver's answer teaches the copy what it says, a hit whose
answer is on the disk tier only is served from it, unless the lease went while it was read, and
nothing is asked of the resolver before the branch's served hits are shipped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mitmproxy.test import taddons

from engine.cache import Address, Recorded
from engine.leased_hits import BranchCopy, local_hit
from engine.refs import BranchRef, TapeRef
from engine.resolve_request import ResolveRequest
from groundhog.protocol.wire import ResolveAsk
from proxy.addon import GroundhogAddon
from proxy.held_branches import LeaseBook
from proxy.lease_shipping import HeldBranch
from proxy.resolver_client import ResolverGone, ResolverRejected, ResolverUnavailable
from tests.proxy.test_answer_disk import answer


def test_leases_are_on_by_default_where_a_directory_is_given(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        # A bare mitmdump has no lease dir: hits go to the resolver, and the proxy says so.
        assert context.options.groundhog_branch_leases is True
        context.configure(addon, groundhog_lease_ship_seconds="0.5")
        assert addon.leases is None
        assert "groundhog_lease_dir is not set" in caplog.text
        context.options.update(groundhog_lease_dir=str(tmp_path))
        assert addon.leases is not None and addon.leases.shipper.window == 0.5
        assert (tmp_path / "holder").read_text().strip() == addon.leases.holder
        context.options.update(groundhog_branch_leases=False)
        assert addon.leases is None


def held_book(tmp_path: Path) -> tuple[LeaseBook, HeldBranch]:
    book = LeaseBook(lambda: pytest.fail("no resolver call expected"), tmp_path, ship_window=1)
    tape = TapeRef(1, "t", 0, "groundhog", True, "closure", {})
    held = HeldBranch(epoch=1, copy=BranchCopy(tape, BranchRef(5, "root/a"), {"k": 1}, {}))
    book._held[("t", "root/a")] = held
    return book, held


def payload() -> dict:
    return {"tape": "t", "branch": "root/a"}


def test_a_served_answer_counts_its_occurrence_and_keeps_its_recording(tmp_path: Path) -> None:
    book, held = held_book(tmp_path)
    response = {"status": 200, "headers": [["A", "b"]], "body": "eA=="}
    book.learn(
        payload(),
        {"action": "serve", "decision": "shared", "request_key": "k", "occurrence": 3,
         "fingerprint": "", "exchange_id": 9, "response": response},
    )  # fmt: skip
    assert held.copy.counts["k"] == 4
    kept = book.answers.get((1, "k", 3, ""))
    assert kept is not None and kept.exchange_id == 9 and kept.response == response


def test_a_live_read_leaves_its_key_unknown_and_a_write_ends_the_copy(tmp_path: Path) -> None:
    book, held = held_book(tmp_path)
    book.learn(
        payload(),
        {"action": "forward", "decision": "recorded", "request_key": "k", "occurrence": 1},
    )
    assert held.unknown == {"k"} and held.copy.counts["k"] == 1
    book._drop = lambda name, why: book._held.pop(name)  # type: ignore[method-assign]
    book.learn(
        payload(), {"action": "forward", "decision": "write", "request_key": "w", "occurrence": 0}
    )
    assert ("t", "root/a") not in book._held


def ask_of_x() -> ResolveAsk:
    return {
        "tape": "t", "branch": "root/a", "method": "GET", "scheme": "http", "host": "w.example",
        "port": 80, "path": "/x", "query": [], "headers": [], "body": "", "body_too_large": False,
    }  # fmt: skip


def address_of_x(held: HeldBranch) -> Address:
    """The address the copy's decision looks up for `ask_of_x` (nothing found there)."""
    looked: list[Address] = []
    local_hit(held.copy, ResolveRequest.model_validate(ask_of_x()), b"", looked.append)  # type: ignore[arg-type, func-returns-value]
    return looked[0]


def on_disk_only(tmp_path: Path) -> tuple[LeaseBook, HeldBranch, Address]:
    """A held branch whose answer of /x is on the disk tier only, as after a restart."""
    book, held = held_book(tmp_path)
    book.answers.bind("s1")
    book.recovered.set()
    address = address_of_x(held)
    assert book.answers.disk is not None
    book.answers.disk.put(("s1", *address), answer(b"recorded before the restart", 41))
    return book, held, address


def test_a_hit_missing_from_memory_is_served_from_the_disk_tier(tmp_path: Path) -> None:
    book, held, address = on_disk_only(tmp_path)

    served = asyncio.run(book.serve(ask_of_x()))

    assert served is not None and served["decision"] == "shared"
    assert served["response"] == answer(b"recorded before the restart", 41).response
    assert [event["exchange_id"] for event in held.pending] == [41]
    assert book.answers.get(address) is not None, "promoted to memory"


def test_a_lease_released_while_its_answer_is_read_from_disk_is_not_served(
    tmp_path: Path,
) -> None:
    book, held, _ = on_disk_only(tmp_path)
    fetch = book.answers.fetch

    async def released_meanwhile(address: Address) -> Recorded | None:
        book._held.pop(("t", "root/a"))  # asked back: its pending hits are being shipped
        return await fetch(address)

    book.answers.fetch = released_meanwhile  # type: ignore[method-assign]
    assert asyncio.run(book.serve(ask_of_x())) is None
    assert held.pending == [] and book.log.unshipped() == {}


def test_an_ask_is_not_sent_while_the_branchs_hits_cannot_be_shipped(tmp_path: Path) -> None:
    class Gone:
        resolve_retry = 0.2

        async def ship_lease_events(self, payload: dict) -> dict:
            raise ResolverGone("every replica refused")

    book = LeaseBook(lambda: Gone(), tmp_path, ship_window=60)  # type: ignore[arg-type, return-value]
    tape = TapeRef(1, "t", 0, "groundhog", True, "closure", {})
    held = HeldBranch(epoch=1, copy=BranchCopy(tape, BranchRef(5, "root/a"), {"k": 1}, {}))
    held.pending.append({"key_hash": "k", "occurrence": 0, "serial": 1})
    book._held[("t", "root/a")] = held
    book.recovered.set()
    asked: list[dict] = []

    async def ask(sent: dict) -> None:
        asked.append(sent)

    with pytest.raises(ResolverUnavailable, match="could not ship"):
        asyncio.run(book.answer(payload(), ask))  # type: ignore[arg-type]
    assert asked == [], "asked the resolver from counts that miss a served hit"


def test_a_take_lost_with_the_resolver_is_tried_again_and_a_refusal_cools_down(
    tmp_path: Path,
) -> None:
    """A resolver that died may have granted the lease before answering: the branch's next ask
    must take it again (so it is renewed and released when asked back), not go on without it."""

    class Resolver:
        def __init__(self, *outcomes: Exception) -> None:
            self.outcomes, self.takes = list(outcomes), 0

        async def take_lease(self, payload: dict) -> dict:
            self.takes += 1
            raise self.outcomes.pop(0)

    async def take_twice(book: LeaseBook) -> None:
        assert await book._take(("t", "root/a")) is None
        assert await book._take(("t", "root/a")) is None

    gone = Resolver(ResolverGone("died after its commit"), ResolverGone("still down"))
    asyncio.run(take_twice(LeaseBook(lambda: gone, tmp_path / "a", ship_window=1)))  # type: ignore[arg-type, return-value]
    assert gone.takes == 2
    refusing = Resolver(ResolverRejected(503, [], b"branch-leased"))
    asyncio.run(take_twice(LeaseBook(lambda: refusing, tmp_path / "b", ship_window=1)))  # type: ignore[arg-type, return-value]
    assert refusing.takes == 1  # cooled down: not asked again at once


def test_a_read_ahead_is_asked_once_a_sibling_recording_is_served_and_names_what_is_kept(
    tmp_path: Path,
) -> None:
    """A take reads nothing ahead; the resolver serving the branch a recording this sidecar
    lacked is what makes the rest of its siblings' recordings worth asking for (once a lease),
    naming what is kept already so it is not sent again."""
    response = {"status": 200, "headers": [], "body": "eA=="}
    shared = {"action": "serve", "decision": "shared", "fingerprint": "", "response": response}

    class Resolver:
        def __init__(self) -> None:
            self.asked: list[dict] = []

        async def take_lease(self, payload: dict) -> dict:
            return {
                "epoch": 1, "expires": 0.0, "shipped": 0, "lease_seconds": 30.0, "store": "s",
                "tape": {"id": 3, "name": "t", "world_seed": 0, "mode": "groundhog",
                         "online": True, "dependency_model": "closure", "config": {}},
                "branch": {"id": 5, "path": payload["branch"]}, "counts": {}, "versions": {},
            }  # fmt: skip

        async def read_ahead(self, payload: dict) -> dict:
            self.asked.append(payload)
            ahead = {"key": "n", "occurrence": 0, "fingerprint": "", "exchange_id": 12,
                     "response": response}  # fmt: skip
            return {"ahead": [ahead]}

    resolver = Resolver()
    book = LeaseBook(lambda: resolver, tmp_path, ship_window=1)  # type: ignore[arg-type, return-value]
    name = {"tape": "t", "branch": "root/a"}

    async def scenario() -> None:
        await book._take(("t", "root/a"))
        assert resolver.asked == []  # the grant alone reads nothing ahead
        live = {**shared, "decision": "recorded", "request_key": "r", "occurrence": 0}
        book.learn(name, {**live, "exchange_id": 7})  # type: ignore[arg-type]
        await asyncio.sleep(0)
        assert resolver.asked == []  # its own recording: nothing a sibling made elsewhere
        for exchange_id, key in ((11, "j"), (13, "k")):
            book.learn(name, {**shared, "request_key": key, "occurrence": 0,  # type: ignore[arg-type]
                              "exchange_id": exchange_id})  # fmt: skip
        await asyncio.gather(*book._reading_ahead)
        if book._renewer is not None:
            book._renewer.cancel()

    asyncio.run(scenario())
    # Asked once, naming what is kept newest first.
    assert resolver.asked == [{"tape": "t", "branch": "root/a", "held": [13, 11]}]
    kept = book.answers.get((3, "n", 0, ""))
    assert kept is not None and kept.exchange_id == 12
