"""ClaimKeeper (proxy/renewal.py): renews a live call's claim, and ends it at its deadlines.

Driven by a fake resolver that counts renewals; the tests wait for events (a renewal, a
timeout callback) with generous bounds and never assert how long anything took.
"""

from __future__ import annotations

import asyncio

import pytest

from proxy.renewal import ClaimKeeper


class FakeResolver:
    def __init__(self, answers: list[float | Exception | None]) -> None:
        self.answers = answers
        self.calls: list[str] = []
        self.called = asyncio.Event()

    async def renew(self, ticket: str) -> float | None:
        self.calls.append(ticket)
        self.called.set()
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


async def renewals(resolver: FakeResolver, count: int) -> None:
    while len(resolver.calls) < count:
        resolver.called.clear()
        await asyncio.wait_for(resolver.called.wait(), timeout=30)


def keeper(resolver: FakeResolver, timeouts: list[str], **limits: float) -> ClaimKeeper:
    return ClaimKeeper(
        resolver,
        "t-1",
        claim_seconds=limits.get("claim", 0.3),
        answer_timeout=limits.get("answer", 600),
        deadline=limits.get("deadline", 600),
        on_timeout=timeouts.append,
    )


def test_a_running_call_renews_its_claim_until_stopped() -> None:
    async def go() -> tuple[ClaimKeeper, FakeResolver]:
        resolver = FakeResolver([0.3])
        running = keeper(resolver, [])
        running.start()
        await renewals(resolver, 3)
        running.stop()
        return running, resolver

    running, resolver = asyncio.run(go())
    assert running.renewals >= 3 and set(resolver.calls) == {"t-1"}
    assert running.timed_out is None


def test_a_failing_renewal_is_retried_and_a_superseded_ticket_stops_renewing() -> None:
    async def go() -> tuple[ClaimKeeper, FakeResolver]:
        resolver = FakeResolver([ConnectionError("resolver down"), None])
        running = keeper(resolver, [])
        running.start()
        await renewals(resolver, 2)
        calls = len(resolver.calls)
        await asyncio.sleep(0.5)  # more than one renewal interval (0.1 s): none may follow
        running.stop()
        return running, resolver, calls

    running, resolver, calls = asyncio.run(go())
    assert running.superseded and running.renewals == 0
    assert len(resolver.calls) == calls == 2


@pytest.mark.parametrize(
    ("limits", "answered", "said"),
    [({"deadline": 0.05}, True, "complete answer"), ({"answer": 0.05}, False, "no answer")],
)
def test_a_call_past_its_limit_is_ended_once(limits: dict, answered: bool, said: str) -> None:
    async def go() -> tuple[ClaimKeeper, list[str]]:
        timeouts: list[str] = []
        running = keeper(FakeResolver([30.0]), timeouts, claim=30, **limits)
        if answered:
            running.answered()
        running.start()
        while not timeouts:
            await asyncio.sleep(0.01)
        running.stop()
        return running, timeouts

    running, timeouts = asyncio.run(go())
    assert len(timeouts) == 1 and said in timeouts[0] and timeouts[0].startswith("timeout")
    assert running.timed_out == timeouts[0]


def test_stop_cancels_the_task_however_the_flow_ends() -> None:
    async def go() -> bool:
        running = keeper(FakeResolver([30.0]), [], claim=30)
        running.start()
        task = running._task
        running.stop()
        await asyncio.sleep(0)
        return task is not None and task.cancelled()

    assert asyncio.run(go())
