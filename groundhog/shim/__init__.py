"""Keyed time, random and uuid for one branch of a world (DESIGN §5).

    from groundhog.shim import shim, agent_rng
    with shim(world_seed=7, branch="root/b2"):
        time.time(); random.random()                 # same in every branch of world 7
        uuid.uuid4()                                 # unique per (tape, branch, call index)
        agent_rng().random()                         # different per branch, on purpose

Without it, each branch of a fork reads its own clock and draws its own random numbers, and
that noise lands in the group-relative advantage as variance. See docs/shim.md for the limits.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundhog.shim.api import agent_rng, counters, current, install, shim, uninstall, world_rng
    from groundhog.shim.context import outside_branch
    from groundhog.shim.keyed import KeyedRandom, keyed_bytes, seed_key
    from groundhog.shim.patches import installed
    from groundhog.shim.state import BranchState, ShimError

# Names are imported on first use: the admin client needs only `shim.context` (a ContextVar), and
# `groundhog tape ls` must not pay for the patches and asyncio it never touches.
_EXPORTS = {
    "agent_rng": "groundhog.shim.api",
    "counters": "groundhog.shim.api",
    "current": "groundhog.shim.api",
    "install": "groundhog.shim.api",
    "shim": "groundhog.shim.api",
    "uninstall": "groundhog.shim.api",
    "world_rng": "groundhog.shim.api",
    "outside_branch": "groundhog.shim.context",
    "KeyedRandom": "groundhog.shim.keyed",
    "keyed_bytes": "groundhog.shim.keyed",
    "seed_key": "groundhog.shim.keyed",
    "installed": "groundhog.shim.patches",
    "BranchState": "groundhog.shim.state",
    "ShimError": "groundhog.shim.state",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'groundhog.shim' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "BranchState",
    "KeyedRandom",
    "ShimError",
    "agent_rng",
    "counters",
    "current",
    "install",
    "installed",
    "keyed_bytes",
    "outside_branch",
    "seed_key",
    "shim",
    "uninstall",
    "world_rng",
]
