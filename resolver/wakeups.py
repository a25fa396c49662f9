"""Wake single-flight waiters the moment their address settles, instead of polling the store.

Siblings of a group wait on the one asker that fetches an address; they should get its answer
within a small fraction of one upstream call (DESIGN §4). The record path (a threadpool thread)
calls `notify(address)` after its commit; each `/v1/wait` (on the event loop) listens on the
address before it looks at the store, so a record that lands between the look and the wait is
not missed. Waiters on other resolver replicas are not reached from here: they fall back to a
slow store poll.

Every notify also goes in a short settle log, so that a waiter can skip its first look. A
resolve that answers `wait` takes a `Mark` of the log before it looks at the store and puts it
in the wait token; when the `/v1/wait` arrives at the same process and its address has not
settled since the mark (and the holder's lease has not lapsed), the look would only find the
same claim again, so the waiter goes straight to sleep. Without the log each sibling's first
wait was one more write-locked transaction on the event loop, taken just as the holder's
record queues behind it: in a group of four, three such looks delayed the record that all of
them wait for.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from engine.cache import Address

# Addresses the settle log keeps; a mark older than the oldest forgotten one always looks.
SETTLED_REMEMBERED = 4096


class Mark(NamedTuple):
    """Where one process's settle log stood (`Wakeups.mark`)."""

    process: str  # which process's log: a mark from another replica or run proves nothing
    position: int


class Wakeups:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[Address, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._blocked = 0
        self._process = secrets.token_hex(8)
        self._position = 0
        self._settled: OrderedDict[Address, int] = OrderedDict()
        self._forgotten = 0  # the latest position the log no longer holds

    def mark(self) -> Mark:
        """The settle log's position now: take it before looking at the store."""
        with self._lock:
            return Mark(self._process, self._position)

    def settled_since(self, address: Address, mark: Mark) -> bool:
        """Whether `address` may have been notified after `mark` (True when unknowable)."""
        if mark.process != self._process:
            return True
        with self._lock:
            if mark.position < self._forgotten:
                return True
            return self._settled.get(address, 0) > mark.position

    @contextmanager
    def listen(self, address: Address) -> Iterator[asyncio.Event]:
        """An event set when `address` is notified; registered until the block ends."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._listeners.setdefault(address, set()).add(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                listeners = self._listeners.get(address)
                if listeners is not None:
                    listeners.discard(entry)
                    if not listeners:
                        del self._listeners[address]

    def notify(self, address: Address) -> int:
        """Wake every listener of `address` (from any thread); returns how many were woken."""
        with self._lock:
            self._position += 1
            self._settled[address] = self._position
            self._settled.move_to_end(address)
            if len(self._settled) > SETTLED_REMEMBERED:
                _oldest, self._forgotten = self._settled.popitem(last=False)
            listeners = list(self._listeners.get(address, ()))
        for loop, event in listeners:
            with contextlib.suppress(RuntimeError):  # that loop closed: its waiter is gone
                loop.call_soon_threadsafe(event.set)
        return len(listeners)

    def listening(self) -> int:
        with self._lock:
            return sum(len(listeners) for listeners in self._listeners.values())

    def blocked(self) -> int:
        """Waiters asleep on their event right now (they have looked at the store)."""
        return self._blocked

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """True if `event` was set within `timeout` seconds."""
        self._blocked += 1  # only the event loop's thread touches this
        try:
            await asyncio.wait_for(event.wait(), max(0.0, timeout))
        except TimeoutError:
            return False
        finally:
            self._blocked -= 1
        return True
