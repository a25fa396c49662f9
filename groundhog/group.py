"""GroupRunner: fork N branches from one point, run a rollout on each, return advantages.

This is the GRPO-style loop Groundhog exists for: each branch runs with its own proxy
identity and its own shim context resumed from the fork point, so the exogenous noise is
common to the group and cancels in `a_i = r_i - mean(r)`. Doing the fork, the shim hand-off
and the isolation by hand in every training script is where branches silently desynchronise.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from groundhog.branch import Branch
from groundhog.errors import LocalProblem
from groundhog.shim import current, shim
from groundhog.tape import Tape

logger = logging.getLogger(__name__)

Rollout = Callable[[Branch], float] | Callable[[Branch], Awaitable[float]]


class RolloutError(LocalProblem, RuntimeError):
    """A rollout raised or returned something that is not a finite reward."""

    title = "Rollout failed"

    def __init__(self, branch: str, message: str) -> None:
        super().__init__(f"rollout on branch {branch}: {message}")
        self.branch = branch


def advantages(rewards: list[float]) -> list[float]:
    """Group-relative advantages `r_i - mean(r)`."""
    if not rewards:
        return []
    mean = math.fsum(rewards) / len(rewards)
    return [reward - mean for reward in rewards]


@dataclass(frozen=True)
class GroupResult:
    parent: str
    branches: list[Branch]
    rewards: list[float]
    advantages: list[float]

    @property
    def mean_reward(self) -> float:
        return math.fsum(self.rewards) / len(self.rewards) if self.rewards else 0.0


def _reward(branch: Branch, value: Any) -> float:
    try:
        reward = float(value)
    except (TypeError, ValueError):
        raise RolloutError(branch.path, f"returned {value!r}, not a number") from None
    if not math.isfinite(reward):
        raise RolloutError(branch.path, f"returned the non-finite reward {reward}")
    return reward


class GroupRunner:
    """Runs one rollout function on `size` fresh branches forked from `parent`.

    `rollout(branch)` may be sync (run in threads) or async (run with `asyncio.gather`); it
    returns the branch's reward. Inside it, time/random/uuid are the branch's shim, and
    `branch.client()` / `branch.session()` reach the world through the proxy.
    """

    def __init__(
        self,
        tape: Tape,
        *,
        parent: str = "root",
        size: int = 4,
        shim_options: dict[str, Any] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"a group needs at least one branch, got size={size}")
        self.tape = tape
        self.parent = parent
        self.size = size
        self.shim_options = dict(shim_options or {})

    def _fork(self) -> tuple[list[Branch], dict[str, Any] | None]:
        state = current()
        counters = state.counters() if state is not None else None
        branches = self.tape.fork(self.parent, self.size, shim_counters=counters)
        logger.info("forked %s into %s", self.parent, [branch.path for branch in branches])
        return branches, counters

    def _shim(self, branch: Branch, counters: dict[str, Any] | None) -> shim:
        return shim(
            world_seed=self.tape.world_seed,
            branch=branch.path,
            tape=self.tape.name,
            counters=counters,
            **self.shim_options,
        )

    def _result(self, branches: list[Branch], rewards: list[float]) -> GroupResult:
        return GroupResult(self.parent, branches, rewards, advantages(rewards))

    def run(self, rollout: Rollout) -> GroupResult:
        """Fork, run every branch to its reward, and return the group's advantages."""
        if inspect.iscoroutinefunction(rollout):
            return asyncio.run(self.arun(rollout))
        branches, counters = self._fork()

        def one(branch: Branch) -> float:
            with self._shim(branch, counters):
                value = rollout(branch)
            if inspect.isawaitable(value):
                raise RolloutError(branch.path, "returned an awaitable: use an async def rollout")
            return _reward(branch, value)

        with ThreadPoolExecutor(
            max_workers=self.size, thread_name_prefix="groundhog-branch"
        ) as pool:
            futures = [pool.submit(one, branch) for branch in branches]
            rewards = [future.result() for future in futures]
        return self._result(branches, rewards)

    async def arun(self, rollout: Callable[[Branch], Awaitable[float]]) -> GroupResult:
        """`run` for an async rollout, from inside a running event loop."""
        branches, counters = await asyncio.to_thread(self._fork)

        async def one(branch: Branch) -> float:
            with self._shim(branch, counters):
                value = await rollout(branch)
            return _reward(branch, value)

        rewards = await asyncio.gather(*(one(branch) for branch in branches))
        return self._result(branches, list(rewards))
