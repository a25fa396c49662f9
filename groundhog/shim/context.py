"""Which branch, if any, the running code belongs to.

The patched functions are installed once per process and ask this module on every call. A
`ContextVar` (not a global) is what lets asyncio tasks started with `asyncio.gather`, and
threads that enter their own `shim(...)`, each see their own branch, while code outside any
branch context keeps the real clock, random and uuid.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar, Token

from groundhog.shim.state import BranchState

# Marks a stretch of code that must see the real world even inside a branch (Groundhog's own
# admin calls): otherwise its clock reads would move the branch's virtual clock.
_OUTSIDE = object()

_current: ContextVar[object | None] = ContextVar("groundhog_shim_branch", default=None)
_process_default: BranchState | None = None


def active() -> BranchState | None:
    """The branch of this context; else the process-wide one set by `install()`; else None."""
    state = _current.get()
    if state is None:
        return _process_default
    return None if state is _OUTSIDE else state  # type: ignore[return-value]


@contextlib.contextmanager
def outside_branch() -> Iterator[None]:
    """Run a block with the real time, random and uuid, whatever branch surrounds it."""
    token = _current.set(_OUTSIDE)
    try:
        yield
    finally:
        _current.reset(token)


def enter(state: BranchState) -> Token[object | None]:
    return _current.set(state)


def leave(token: Token[object | None]) -> None:
    _current.reset(token)


def set_process_default(state: BranchState | None) -> None:
    global _process_default
    _process_default = state


def process_default() -> BranchState | None:
    return _process_default
