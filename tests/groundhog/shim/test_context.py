"""Unit tests of groundhog/shim/context.py: which branch the running code belongs to."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from groundhog.shim import context
from groundhog.shim.state import BranchState


@pytest.fixture
def no_default() -> Iterator[None]:
    saved = context.process_default()
    context.set_process_default(None)
    yield
    context.set_process_default(saved)


def test_nothing_active_outside_any_branch(no_default: None) -> None:
    assert context.active() is None


def test_enter_and_leave_nest(no_default: None) -> None:
    outer, inner = BranchState(1, "root/a"), BranchState(1, "root/b")
    first = context.enter(outer)
    second = context.enter(inner)
    assert context.active() is inner
    context.leave(second)
    assert context.active() is outer
    context.leave(first)
    assert context.active() is None


def test_process_default_applies_only_where_no_branch_is_entered(no_default: None) -> None:
    default, own = BranchState(1, "root"), BranchState(1, "root/x")
    context.set_process_default(default)
    assert context.process_default() is default
    assert context.active() is default
    token = context.enter(own)
    assert context.active() is own
    context.leave(token)
    assert context.active() is default


def test_outside_branch_hides_the_branch_and_the_default(no_default: None) -> None:
    context.set_process_default(BranchState(1, "root"))
    token = context.enter(BranchState(1, "root/a"))
    try:
        with context.outside_branch():
            assert context.active() is None
        assert context.active() is not None and context.active().branch == "root/a"
    finally:
        context.leave(token)


def test_outside_branch_restores_even_on_error(no_default: None) -> None:
    state = BranchState(1, "root/a")
    token = context.enter(state)
    with pytest.raises(RuntimeError), context.outside_branch():
        raise RuntimeError("boom")
    assert context.active() is state
    context.leave(token)


def test_tasks_and_threads_see_their_own_branch(no_default: None) -> None:
    async def in_branch(path: str) -> str:
        token = context.enter(BranchState(1, path))
        await asyncio.sleep(0)
        seen = context.active()
        context.leave(token)
        return seen.branch if seen else "none"

    async def both() -> list[str]:
        return list(await asyncio.gather(in_branch("root/a"), in_branch("root/b")))

    assert asyncio.run(both()) == ["root/a", "root/b"]

    token = context.enter(BranchState(1, "root/main"))
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(context.active()))
    thread.start()
    thread.join()
    context.leave(token)
    assert seen == [None]  # a new thread starts with an empty context
