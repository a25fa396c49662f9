"""Keep a ticket's single-flight claim alive while its live call runs, and bound that call.

The resolver hands a forwarded ask a claim lasting `claim_seconds`; siblings asking the same
address wait, and take over only when the claim lapses. A slow but live upstream call must
therefore renew its claim (every claim/3), or a sibling would make a second live
call and the address would get two different answers. Every live call also has limits: a
first answer (the response head) within `answer_timeout`, and an end within `deadline`;
past either, `on_timeout` is called once, and the flow's owner ends the fetch.

`ClaimKeeper` is one asyncio task per live call. It never blocks the event loop (renewals are
awaited HTTP calls with their own timeout), and `stop()` cancels it however the flow ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)

DEFAULT_CLAIM_SECONDS = 30.0
# Renewals stop being useful below this interval; a claim this short is a test setting.
MIN_RENEW_INTERVAL = 0.05


class Renewer(Protocol):
    async def renew(self, ticket: str) -> float | None: ...


class ClaimKeeper:
    def __init__(
        self,
        resolver: Renewer,
        ticket: str,
        *,
        claim_seconds: float | None,
        answer_timeout: float,
        deadline: float,
        on_timeout: Callable[[str], None],
    ) -> None:
        self.resolver = resolver
        self.ticket = ticket
        self.claim_seconds = (
            claim_seconds if claim_seconds and claim_seconds > 0 else DEFAULT_CLAIM_SECONDS
        )
        self.answer_timeout = answer_timeout
        self.deadline = deadline
        self.on_timeout = on_timeout
        self.renewals = 0
        self.superseded = False  # the resolver says another fetcher holds the address now
        self.timed_out: str | None = None
        self._answered = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"groundhog-claim-{self.ticket}"
        )

    def answered(self) -> None:
        """The world's response head arrived: only the overall deadline applies now."""
        self._answered = True

    def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        end = started + self.deadline
        first_answer_by = started + self.answer_timeout
        next_renewal = started + self._interval()
        while True:
            wake = min(end, next_renewal, first_answer_by if not self._answered else end)
            await asyncio.sleep(max(0.0, wake - loop.time()))
            now = loop.time()
            if now >= end:
                self._expire(f"timeout: no complete answer within {self.deadline:g} s")
                return
            if not self._answered and now >= first_answer_by:
                self._expire(f"timeout: no answer within {self.answer_timeout:g} s")
                return
            if now >= next_renewal and not self.superseded:
                await self._renew()
                next_renewal = loop.time() + self._interval()
            elif self.superseded:
                next_renewal = end

    def _interval(self) -> float:
        return max(MIN_RENEW_INTERVAL, self.claim_seconds / 3)

    async def _renew(self) -> None:
        try:
            renewed = await self.resolver.renew(self.ticket)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # unreachable resolver, or one without /v1/renew
            # Renewal is best effort: if it keeps failing, the claim lapses and a sibling may
            # take over; the record of this fetch then loses (first wins) and is not served.
            log.warning("could not renew the claim of ticket %s: %s", self.ticket, error)
            return
        if renewed is None:
            log.warning("ticket %s was superseded; its fetch will not be served", self.ticket)
            self.superseded = True
            return
        self.renewals += 1
        if renewed > 0:
            self.claim_seconds = renewed

    def _expire(self, reason: str) -> None:
        self.timed_out = reason
        try:
            self.on_timeout(reason)
        except Exception:  # the flow may be gone already; never kill the loop's task noisily
            log.exception("ending the live call of ticket %s failed", self.ticket)
