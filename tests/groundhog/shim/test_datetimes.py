"""Unit tests of groundhog/shim/datetimes.py: datetime stand-ins reading the virtual clock."""

from __future__ import annotations

import datetime
import pickle
from collections.abc import Iterator

import pytest

from groundhog.shim import context
from groundhog.shim.datetimes import REAL_DATE, REAL_DATETIME, ShimDate, ShimDatetime
from groundhog.shim.state import BranchState

EPOCH_NS = 1_700_000_000 * 10**9  # 2023-11-14T22:13:20Z


@pytest.fixture
def branch() -> Iterator[BranchState]:
    saved = context.process_default()
    context.set_process_default(None)
    state = BranchState(1, "root", tick_ns=1_500_000, epoch_ns=EPOCH_NS)
    token = context.enter(state)
    yield state
    context.leave(token)
    context.set_process_default(saved)


def test_now_reads_the_virtual_clock_with_microseconds(branch: BranchState) -> None:
    moment = ShimDatetime.now(datetime.UTC)
    assert type(moment) is REAL_DATETIME
    assert moment == REAL_DATETIME(2023, 11, 14, 22, 13, 20, 1500, tzinfo=datetime.UTC)
    later = ShimDatetime.now(datetime.UTC)
    assert later - moment == datetime.timedelta(microseconds=1500)


def test_utcnow_is_naive_utc(branch: BranchState) -> None:
    branch.advance(3600)
    moment = ShimDatetime.utcnow()
    assert moment.tzinfo is None
    assert moment == REAL_DATETIME(2023, 11, 14, 23, 13, 20, 1500)


def test_today_and_date_today_follow_the_clock(branch: BranchState) -> None:
    branch.advance(2 * 3600)  # past midnight UTC
    seconds = (EPOCH_NS + 2 * 3600 * 10**9) // 10**9
    assert ShimDatetime.today() == REAL_DATETIME.fromtimestamp(seconds).replace(microsecond=1500)
    local = REAL_DATETIME.fromtimestamp((EPOCH_NS + 2 * 3600 * 10**9 + 3_000_000) // 10**9)
    assert ShimDate.today() == local.date()
    assert type(ShimDate.today()) is REAL_DATE


def test_outside_a_branch_the_real_clock_answers() -> None:
    saved = context.process_default()
    context.set_process_default(None)
    try:
        before = REAL_DATETIME.now(datetime.UTC)
        now = ShimDatetime.now(datetime.UTC)
        utc = ShimDatetime.utcnow()
        after = REAL_DATETIME.now(datetime.UTC)
        assert before <= now <= after
        assert before.replace(tzinfo=None) <= utc <= after.replace(tzinfo=None)
        assert ShimDate.today() in {before.astimezone().date(), after.astimezone().date()}
    finally:
        context.set_process_default(saved)


def test_constructors_give_real_values_that_pass_isinstance() -> None:
    made = ShimDatetime(2024, 1, 2, 3, 4, 5)
    assert type(made) is REAL_DATETIME
    assert pickle.loads(pickle.dumps(made)) == made
    assert isinstance(REAL_DATETIME(2020, 1, 1), ShimDatetime)
    assert isinstance(REAL_DATE(2020, 1, 1), ShimDate)
    assert isinstance(REAL_DATETIME(2020, 1, 1), ShimDate)  # a datetime is a date
    assert not isinstance(REAL_DATE(2020, 1, 1), ShimDatetime)
    assert issubclass(REAL_DATETIME, ShimDatetime)
    assert type(ShimDate(2024, 2, 29)) is REAL_DATE
