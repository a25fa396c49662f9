"""Unit tests of resolver/wakeups.py: a notify from another thread wakes the listeners, and a
mark tells whether an address settled after it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from resolver import wakeups as wakeups_module
from resolver.wakeups import Wakeups

ADDRESS = (1, "k", 0, "")


def test_a_notify_from_another_thread_wakes_only_that_address() -> None:
    wakeups = Wakeups()

    async def main() -> tuple[bool, bool]:
        with wakeups.listen(ADDRESS) as mine, wakeups.listen((1, "k", 1, "")) as other:
            assert wakeups.listening() == 2
            threading.Thread(target=wakeups.notify, args=(ADDRESS,)).start()
            woke = await wakeups.wait(mine, 30)
            return woke, other.is_set()

    woke, other_set = asyncio.run(main())
    assert woke and not other_set
    assert wakeups.listening() == 0


def test_without_a_notify_the_wait_times_out() -> None:
    wakeups = Wakeups()

    async def main() -> bool:
        with wakeups.listen(ADDRESS) as event:
            blocked = asyncio.ensure_future(wakeups.wait(event, 0.01))
            await asyncio.sleep(0)
            assert wakeups.blocked() == 1
            return await blocked

    assert asyncio.run(main()) is False
    assert wakeups.blocked() == 0
    assert wakeups.notify(ADDRESS) == 0


def test_a_mark_sees_only_settles_of_its_address_made_after_it() -> None:
    wakeups = Wakeups()
    wakeups.notify(ADDRESS)
    mark = wakeups.mark()
    assert not wakeups.settled_since(ADDRESS, mark)  # the settle before the mark is old news
    wakeups.notify((1, "k", 1, ""))
    assert not wakeups.settled_since(ADDRESS, mark)  # another address settled
    wakeups.notify(ADDRESS)
    assert wakeups.settled_since(ADDRESS, mark)
    assert not wakeups.settled_since(ADDRESS, wakeups.mark())


def test_a_mark_of_another_process_or_older_than_the_log_proves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wakeups, elsewhere = Wakeups(), Wakeups()
    assert wakeups.settled_since(ADDRESS, elsewhere.mark())  # another replica, or a restart
    monkeypatch.setattr(wakeups_module, "SETTLED_REMEMBERED", 2)
    mark = wakeups.mark()
    for occurrence in range(1, 4):  # three other addresses: the log forgets the first
        wakeups.notify((1, "k", occurrence, ""))
    assert wakeups.settled_since(ADDRESS, mark)  # it may have been among the forgotten
    assert not wakeups.settled_since(ADDRESS, wakeups.mark())
