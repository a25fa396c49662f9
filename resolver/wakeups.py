"""Wake single-flight waiters the moment their address settles, instead of polling the store.

Siblings of a group wait on the one asker that fetches an address; they should get its answer
within a small fraction of one upstream call (DESIGN §4). The record path (a threadpool thread)
calls `notify(address)` after its commit; each `/v1/wait` (on the event loop) listens on the
address before it looks at the store, so a record that lands between the look and the wait is
not missed. Waiters on other resolver replicas are not reached from here: they fall back to a
slow store poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

Address = tuple[int, str, int, str]  # tape id, key hash, occurrence, fingerprint


class Wakeups:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[Address, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._blocked = 0

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
