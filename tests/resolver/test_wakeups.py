"""Unit tests of resolver/wakeups.py: a notify from another thread wakes the listeners."""

from __future__ import annotations

import asyncio
import threading

from resolver.wakeups import Wakeups, wait_for

ADDRESS = (1, "k", 0, "")


def test_a_notify_from_another_thread_wakes_only_that_address() -> None:
    wakeups = Wakeups()

    async def main() -> tuple[bool, bool]:
        with wakeups.listen(ADDRESS) as mine, wakeups.listen((1, "k", 1, "")) as other:
            assert wakeups.listening() == 2
            threading.Thread(target=wakeups.notify, args=(ADDRESS,)).start()
            woke = await wait_for(mine, 30)
            return woke, other.is_set()

    woke, other_set = asyncio.run(main())
    assert woke and not other_set
    assert wakeups.listening() == 0


def test_without_a_notify_the_wait_times_out() -> None:
    wakeups = Wakeups()

    async def main() -> bool:
        with wakeups.listen(ADDRESS) as event:
            return await wait_for(event, 0.01)

    assert asyncio.run(main()) is False
    assert wakeups.notify(ADDRESS) == 0
