"""proxy/branch_leases.py under mitmproxy's test context: leases are off unless asked for, need
a directory for their log, a resolver's answer teaches the copy what it says, and nothing is
asked of the resolver before the branch's served hits are shipped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mitmproxy.exceptions import OptionsError
from mitmproxy.test import taddons

from proxy.addon import GroundhogAddon
from proxy.branch_leases import LeaseBook
from proxy.lease_shipping import HeldBranch
from proxy.resolver_client import ResolverGone, ResolverUnavailable
from resolver.leased_hits import BranchCopy
from store.refs import BranchRef, TapeRef


def test_leases_are_off_by_default_and_on_need_a_directory(tmp_path: Path) -> None:
    addon = GroundhogAddon()
    with taddons.context(addon) as context:
        assert addon.leases is None
        with pytest.raises(OptionsError, match="groundhog_lease_dir"):
            context.options.update(groundhog_branch_leases=True, groundhog_lease_dir=None)
        context.options.update(
            groundhog_branch_leases=True,
            groundhog_lease_dir=str(tmp_path),
            groundhog_lease_ship_seconds="0.5",
        )
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
    kept = book.cache.get((1, "k", 3, ""))
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
