"""A lease holder's recorded answers by address: memory, then disk, through one lookup.

The sidecar decides a leased branch's hits with the resolver's code (engine/leased_hits.py),
whose lookup of the recorded answer is synchronous: it runs on mitmproxy's event loop, between
the request and its answer. Memory (engine/cache.py's `AnswerCache`) answers it at once. A
memory miss the disk tier (proxy/answer_disk.py) holds is read in a thread and the decision
made again with the answer read (`decide`); a read on the loop would stall every flow of the
proxy for as long as the disk takes, and a cold or throttled disk can take milliseconds. What
the holder learns is kept in both tiers: in memory at once, and on disk by one writer thread
behind (write-through: the disk holds everything memory does and more, so nothing needs
writing when memory evicts). Without this module the lease book would have to know both tiers
where it serves and where it keeps, and a disk read would block the loop or need a decision
path of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from engine.cache import Address, AnswerCache, Recorded
from groundhog.protocol.wire import MAX_HELD_EXCHANGES
from proxy.answer_disk import DIRECTORY_NAME, AnswerDisk, DiskKey

log = logging.getLogger(__name__)

# Writes waiting for the writer thread at most: a disk slower than answers arrive leaves the
# rest in memory only, rather than holding every one of them twice, queued.
MAX_QUEUED_WRITES = 256
# A read-ahead names the newest exchanges of its tape kept here, at most as many as the resolver
# takes; more are remembered, up to four times as many.
HELD_NAMED = MAX_HELD_EXCHANGES

Find = Callable[[Address], Recorded | None]
T = TypeVar("T")


class LeaseAnswers:
    """Memory within `memory_bytes`, and `<directory>/answers/` within `disk_bytes` (0: none)."""

    def __init__(self, directory: Path, *, memory_bytes: int, disk_bytes: int) -> None:
        self.memory = AnswerCache(memory_bytes)
        self._directory = directory / DIRECTORY_NAME
        self.disk = AnswerDisk(self._directory, disk_bytes) if disk_bytes > 0 else None
        # The store the held leases' tapes live in (the grant's `store`): disk keys start with it.
        self.store: str | None = None
        self._writer = concurrent.futures.ThreadPoolExecutor(1, "groundhog-answer-disk")
        self._writing: dict[DiskKey, asyncio.Future[None]] = {}
        # Per tape id, the exchanges kept (memory may have evicted some since: the disk holds
        # them, or a hit of one is asked of the resolver, which is only slower).
        self._kept: dict[int, set[int]] = {}

    def bind(self, store: str | None) -> None:
        """The store a grant came from; another than before (the resolver moved to a new
        store) reuses tape ids, so what memory holds is dropped (the disk files by store)."""
        if store != self.store:
            self.memory = AnswerCache(self.memory.budget_bytes)
            self._kept.clear()
            self.store = store

    def held(self, tape_id: int) -> list[int]:
        """The newest exchanges of tape `tape_id` kept here, newest first (what a read-ahead for
        one of its branches names, so the resolver sends others)."""
        return sorted(self._kept.get(tape_id, ()), reverse=True)[:HELD_NAMED]

    def resize(self, disk_bytes: int) -> None:
        """A new `groundhog_lease_disk_bytes`: 0 stops using the disk (its files stay)."""
        if disk_bytes <= 0:
            self.disk = None
        elif self.disk is None:
            self.disk = AnswerDisk(self._directory, disk_bytes)  # indexed at its first use
        elif disk_bytes != self.disk.budget_bytes:
            self.disk.budget_bytes = disk_bytes
            self._writer.submit(self.disk.evict)  # removing files: not on the loop

    def get(self, address: Address) -> Recorded | None:
        """The memory tier alone: a lookup for the event loop."""
        return self.memory.get(address)

    def keep(self, address: Address, recorded: Recorded) -> None:
        """Keep a recorded answer in memory now and on disk behind (recordings never change:
        an address on disk already is not written again)."""
        self.memory.put(address, recorded)
        kept = self._kept.setdefault(address[0], set())
        kept.add(recorded.exchange_id)
        if len(kept) > 4 * HELD_NAMED:
            self._kept[address[0]] = set(sorted(kept, reverse=True)[:HELD_NAMED])
        key, disk = self._key(address), self.disk
        if key is None or disk is None or key in self._writing or disk.holds(key):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop to keep free (a test's direct call)
            _write(disk, key, recorded)
            return
        if len(self._writing) >= MAX_QUEUED_WRITES:
            log.debug("the answer disk is behind; %s kept in memory only", address)
            return
        writing = loop.run_in_executor(self._writer, _write, disk, key, recorded)
        self._writing[key] = writing
        writing.add_done_callback(lambda _done: self._writing.pop(key, None))

    async def fetch(self, address: Address) -> Recorded | None:
        """The disk tier's answer at `address`, read in a thread and promoted to memory."""
        key, disk = self._key(address), self.disk
        if key is None or disk is None or not disk.holds(key):
            return None
        try:
            found = await asyncio.to_thread(disk.get, key)
        except OSError as error:
            log.warning("could not read a recorded answer from disk: %s", error)
            return None
        if found is not None:
            self.memory.put(address, found)
        return found

    async def decide(self, decide: Callable[[Find], T | None]) -> T | None:
        """`decide` with the memory tier as its lookup; if that missed an address the disk
        holds, decided again once the disk's answer is read (the state it decides from may
        have moved meanwhile: the second decision reads it afresh)."""
        missed: list[Address] = []

        def in_memory(address: Address) -> Recorded | None:
            found = self.memory.get(address)
            if found is None:
                missed.append(address)
            return found

        decided = decide(in_memory)
        if decided is not None or not missed:
            return decided
        fetched = await self.fetch(missed[0])
        if fetched is None:
            return None
        # Memory may have refused it (a body over an eighth of its budget): served from here.
        return decide(lambda address: fetched if address == missed[0] else self.get(address))

    async def open(self) -> None:
        """Index what the disk holds from before a restart (in a thread: it lists a directory)."""
        disk = self.disk
        if disk is not None:
            try:
                await asyncio.to_thread(disk.load)
            except OSError as error:
                log.error("answers kept in memory only: %s is unusable: %s", disk.directory, error)
                self.disk = None

    async def settle(self) -> None:
        """Wait for the disk writes under way (the proxy is stopping; tests)."""
        await asyncio.gather(*self._writing.values(), return_exceptions=True)

    def _key(self, address: Address) -> DiskKey | None:
        return None if self.store is None else (self.store, *address)


def _write(disk: AnswerDisk, key: DiskKey, recorded: Recorded) -> None:
    try:
        disk.put(key, recorded)
    except OSError as error:  # a full or read-only disk: the answer is still in memory
        log.warning("could not keep a recorded answer on disk: %s", error)
