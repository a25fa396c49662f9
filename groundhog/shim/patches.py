"""Install and remove the process-wide patches of time, datetime, random, uuid and asyncio.sleep.

Patches go in once per process and dispatch on the branch context at every call, so branches
can run side by side and code outside any branch sees the real functions. A reference count
lets nested and concurrent `shim(...)` blocks share one installation; the last one out puts
back the exact objects that were there before, so nothing leaks past the shim.
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import asyncio.tasks
import datetime
import functools
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from groundhog.shim.context import active
from groundhog.shim.datetimes import ShimDate, ShimDatetime

_RANDOM_FUNCTIONS = tuple(name for name in random.__all__ if name not in {"Random", "SystemRandom"})
_CLOCK_READS = {
    "time": lambda state: state.wall_ns() / 1e9,
    "time_ns": lambda state: state.wall_ns(),
    "monotonic": lambda state: state.monotonic_ns() / 1e9,
    "monotonic_ns": lambda state: state.monotonic_ns(),
    "perf_counter": lambda state: state.monotonic_ns() / 1e9,
    "perf_counter_ns": lambda state: state.monotonic_ns(),
}

_lock = threading.RLock()
_installations = 0
_originals: dict[tuple[object, str], object] = {}


def _clock_read(name: str, original: Callable[[], Any]) -> Callable[[], Any]:
    read = _CLOCK_READS[name]

    @functools.wraps(original)
    def patched() -> Any:
        state = active()
        return original() if state is None else read(state)

    return patched


def _struct_time(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """gmtime/localtime/ctime: with no argument they read the clock, so read the virtual one."""

    @functools.wraps(original)
    def patched(secs: float | None = None) -> Any:
        state = active()
        if secs is None and state is not None:
            secs = state.wall_ns() // 10**9
        return original(secs)

    return patched


def _sleep(original: Callable[[float], None]) -> Callable[[float], None]:
    @functools.wraps(original)
    def patched(seconds: float) -> None:
        state = active()
        if state is None:
            original(seconds)
        else:
            state.advance(seconds)

    return patched


def _async_sleep(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def patched(delay: float, result: Any = None) -> Any:
        state = active()
        if state is None:
            return await original(delay, result)
        state.advance(delay)
        # Still yield to the loop, so other tasks run as they would around a real sleep.
        return await original(0, result)

    return patched


def _random_function(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def patched(*args: Any, **kwargs: Any) -> Any:
        state = active()
        if state is None:
            return original(*args, **kwargs)
        return getattr(state.world_random, name)(*args, **kwargs)

    return patched


def _uuid_function(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def patched(*args: Any, **kwargs: Any) -> Any:
        state = active()
        if state is None:
            return original(*args, **kwargs)
        return getattr(state, name)(*args, **kwargs)

    return patched


def _replacements() -> list[tuple[object, str, Callable[[Any], Any]]]:
    """(owner, attribute, build-replacement-from-original) for everything the shim patches."""
    plan: list[tuple[object, str, Callable[[Any], Any]]] = []
    plan += [(time, name, functools.partial(_clock_read, name)) for name in _CLOCK_READS]
    plan += [
        (time, name, functools.partial(_struct_time, name))
        for name in ("gmtime", "localtime", "ctime")
    ]
    plan.append((time, "sleep", _sleep))
    plan += [(module, "sleep", _async_sleep) for module in (asyncio, asyncio.tasks)]
    plan += [
        (random, name, functools.partial(_random_function, name)) for name in _RANDOM_FUNCTIONS
    ]
    plan += [(uuid, name, functools.partial(_uuid_function, name)) for name in ("uuid1", "uuid4")]
    plan.append((datetime, "datetime", lambda _original: ShimDatetime))
    plan.append((datetime, "date", lambda _original: ShimDate))
    return plan


_real_monotonic = time.monotonic  # taken at import, before this module can patch it


def _real_loop_time(self: asyncio.base_events.BaseEventLoop) -> float:
    # The loop schedules timers with loop.time() from inside tasks but fires them from outside
    # any task; a virtual clock there would make every asyncio timeout fire at once or never.
    return _real_monotonic()


def acquire() -> None:
    """Install the patches, or count one more user of the existing installation."""
    global _installations
    with _lock:
        _installations += 1
        if _installations > 1:
            return
        _originals[(asyncio.base_events.BaseEventLoop, "time")] = (
            asyncio.base_events.BaseEventLoop.__dict__["time"]
        )
        # Replacing the method is the point; mypy flags any assignment to a method.
        asyncio.base_events.BaseEventLoop.time = _real_loop_time  # type: ignore[method-assign]
        for owner, attribute, build in _replacements():
            original = getattr(owner, attribute)
            _originals[(owner, attribute)] = original
            setattr(owner, attribute, build(original))


def release() -> None:
    """Drop one user; the last one restores the exact original objects."""
    global _installations
    with _lock:
        if _installations == 0:
            raise RuntimeError("the groundhog shim is not installed")
        _installations -= 1
        if _installations > 0:
            return
        for (owner, attribute), original in reversed(list(_originals.items())):
            setattr(owner, attribute, original)
        _originals.clear()


def installed() -> bool:
    with _lock:
        return _installations > 0
