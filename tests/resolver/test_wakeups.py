"""Unit tests of resolver/wakeups.py: a notify from another thread wakes the listeners."""

from __future__ import annotations

import asyncio
import threading

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
