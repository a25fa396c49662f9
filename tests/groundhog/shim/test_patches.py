"""Unit tests of groundhog/shim/patches.py: reference-counted process-wide patches."""

from __future__ import annotations

import asyncio
import datetime
import random
import time
import uuid
from collections.abc import Iterator

import pytest

from groundhog.shim import context, patches
from groundhog.shim.datetimes import ShimDate, ShimDatetime
from groundhog.shim.keyed import keyed_float, seed_key
from groundhog.shim.state import MONOTONIC_BASE_NS, BranchState

EPOCH_NS = 1_700_000_000 * 10**9


@pytest.fixture
def clean() -> Iterator[None]:
    assert not patches.installed(), "another test left the shim installed"
    saved = context.process_default()
    context.set_process_default(None)
    yield
    while patches.installed():
        patches.release()
    context.set_process_default(saved)


def _originals() -> dict[str, object]:
    return {
        "time": time.time,
        "monotonic": time.monotonic,
        "sleep": time.sleep,
        "asyncio.sleep": asyncio.sleep,
        "random": random.random,
        "choice": random.choice,
        "uuid4": uuid.uuid4,
        "datetime": datetime.datetime,
        "date": datetime.date,
        "gmtime": time.gmtime,
    }


def test_last_release_restores_the_exact_originals(clean: None) -> None:
    before = _originals()
    loop_time = asyncio.base_events.BaseEventLoop.__dict__["time"]
    patches.acquire()
    patches.acquire()
    assert patches.installed()
    assert datetime.datetime is ShimDatetime and datetime.date is ShimDate
    assert time.time is not before["time"]
    patches.release()
    assert patches.installed() and datetime.datetime is ShimDatetime
    patches.release()
    assert not patches.installed()
    assert _originals() == before
    assert asyncio.base_events.BaseEventLoop.__dict__["time"] is loop_time


def test_release_without_acquire_is_an_error(clean: None) -> None:
    with pytest.raises(RuntimeError, match="not installed"):
        patches.release()


def test_patched_functions_pass_through_outside_a_branch(clean: None) -> None:
    patches.acquire()
    random.seed(11)
    expected = random.Random(11).random()
    assert random.random() == expected
    real = time.time()
    assert abs(real - datetime.datetime.now().timestamp()) < 60
    assert uuid.uuid4().version == 4


def test_inside_a_branch_clock_random_and_uuid_are_virtual(clean: None) -> None:
    patches.acquire()
    state = BranchState(5, "root", tick_ns=1_000, epoch_ns=EPOCH_NS)
    token = context.enter(state)
    try:
        assert time.time_ns() == EPOCH_NS + 1_000
        assert time.time() == (EPOCH_NS + 2_000) / 1e9
        assert time.monotonic_ns() == MONOTONIC_BASE_NS + 3_000
        assert time.perf_counter() == (MONOTONIC_BASE_NS + 4_000) / 1e9
        time.sleep(10)  # returns at once, clock moves
        assert time.time_ns() == EPOCH_NS + 10 * 10**9 + 5_000
        assert time.gmtime().tm_year == 2023
        assert time.gmtime(0).tm_year == 1970  # an explicit argument is not the clock
        assert random.random() == keyed_float(seed_key(5), "random.random", 0)
        assert uuid.uuid4() == BranchState(5, "root").uuid4()
    finally:
        context.leave(token)


def test_asyncio_sleep_advances_the_virtual_clock_without_waiting(clean: None) -> None:
    patches.acquire()
    state = BranchState(5, "root", tick_ns=0, epoch_ns=EPOCH_NS)

    async def nap() -> tuple[str, float]:
        token = context.enter(state)
        try:
            loop = asyncio.get_running_loop()
            started = loop.time()
            answer = await asyncio.sleep(3600, result="done")
            return answer, loop.time() - started
        finally:
            context.leave(token)

    answer, real_elapsed = asyncio.run(nap())
    assert answer == "done"
    assert real_elapsed < 60  # the loop's own clock stayed real
    assert state.elapsed_ns == 3600 * 10**9
