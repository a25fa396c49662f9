"""The shim's public entry points: `shim`, `install`/`uninstall`, `agent_rng`, `counters`.

Users should not have to know about reference counts or context variables: a `with` block (or
an install for a whole worker process) is enough, and leaving it restores the real functions.
"""

from __future__ import annotations

import json
import os
import random
from contextvars import Token
from types import TracebackType
from typing import Any

from groundhog.shim import context, patches
from groundhog.shim.state import (
    COUNTERS_ENV,
    BranchState,
    ShimError,
    resolve_branch,
    resolve_seed,
    resolve_tape,
)


def _tick_ns(tick: float | None) -> int | None:
    return None if tick is None else round(tick * 1e9)


class shim:
    """Run a block as one branch of a world: time, random and uuid become keyed and virtual.

    `with shim(world_seed=7, branch="root/b2"):` — every value drawn inside is
    `F(world_seed, channel, occurrence)`, the same for every branch with the same seed, while
    `agent_rng()` is keyed by the branch; uuid4/uuid1 are identities, keyed by `tape` and branch
    so siblings never share one. `counters=` resumes from `counters()` taken elsewhere
    (a parent before a fork). `tick` is the seconds each clock read advances; `epoch` the Unix
    time the virtual clock starts at (default: a keyed moment in 2025, the same for the world).
    Arguments left out come from GROUNDHOG_WORLD_SEED / GROUNDHOG_BRANCH / GROUNDHOG_TAPE (branch
    default `root`, tape default none).
    """

    def __init__(
        self,
        world_seed: int | None = None,
        branch: str | None = None,
        *,
        tape: str | None = None,
        counters: dict[str, Any] | None = None,
        tick: float | None = None,
        epoch: float | None = None,
    ) -> None:
        self.state = BranchState(
            resolve_seed(world_seed),
            resolve_branch(branch),
            tape=resolve_tape(tape),
            counters=counters,
            tick_ns=_tick_ns(tick),
            epoch_ns=None if epoch is None else round(epoch * 1e9),
        )
        self._token: Token[object | None] | None = None

    @property
    def world_seed(self) -> int:
        return self.state.world_seed

    @property
    def branch(self) -> str:
        return self.state.branch

    def counters(self) -> dict[str, Any]:
        return self.state.counters()

    def __enter__(self) -> shim:
        if self._token is not None:
            raise ShimError("this shim block is already active; make a new shim(...) to nest")
        patches.acquire()
        self._token = context.enter(self.state)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        token, self._token = self._token, None
        if token is not None:
            context.leave(token)
            patches.release()

    async def __aenter__(self) -> shim:
        return self.__enter__()

    async def __aexit__(self, *exc_info: Any) -> None:
        self.__exit__(*exc_info)


def install(
    world_seed: int | None = None,
    branch: str | None = None,
    *,
    tape: str | None = None,
    counters: dict[str, Any] | None = None,
    tick: float | None = None,
    epoch: float | None = None,
) -> BranchState:
    """Make the whole process one branch (what a worker's sitecustomize calls).

    Every thread and task outside an explicit `shim(...)` block uses this branch. Counters come
    from `counters=`, else the JSON in GROUNDHOG_SHIM_COUNTERS (set by `groundhog run` for a
    forked branch), else start at zero.
    """
    if context.process_default() is not None:
        raise ShimError("the shim is already installed for this process; call uninstall() first")
    if counters is None and os.environ.get(COUNTERS_ENV):
        try:
            counters = json.loads(os.environ[COUNTERS_ENV])
        except json.JSONDecodeError as error:
            raise ShimError(f"{COUNTERS_ENV} is not valid JSON: {error}") from None
    state = BranchState(
        resolve_seed(world_seed),
        resolve_branch(branch),
        tape=resolve_tape(tape),
        counters=counters,
        tick_ns=_tick_ns(tick),
        epoch_ns=None if epoch is None else round(epoch * 1e9),
    )
    patches.acquire()
    context.set_process_default(state)
    return state


def uninstall() -> None:
    """Undo `install()`; once no `shim(...)` block is active the exact originals are back."""
    if context.process_default() is None:
        raise ShimError("the shim is not installed for this process (install() was not called)")
    context.set_process_default(None)
    patches.release()


def current() -> BranchState | None:
    """The active branch state, or None outside any branch context."""
    return context.active()


def _require_active() -> BranchState:
    state = context.active()
    if state is None:
        raise ShimError("not inside a branch: use `with shim(world_seed=…, branch=…)` or install()")
    return state


def counters() -> dict[str, Any]:
    """The active branch's counters, JSON-able; pass them to `shim(counters=…)` or a fork."""
    return _require_active().counters()


def agent_rng() -> random.Random:
    """The policy's own randomness, keyed by branch so siblings explore differently."""
    return _require_active().agent_random


def world_rng() -> random.Random:
    """The world's keyed stream of the active branch (what the module-level functions use)."""
    return _require_active().world_random
