"""Keyed time, random and uuid for one branch of a world (DESIGN §5).

    from groundhog.shim import shim, agent_rng
    with shim(world_seed=7, branch="root/b2"):
        time.time(); random.random(); uuid.uuid4()   # same in every branch of world 7
        agent_rng().random()                         # different per branch, on purpose

Without it, each branch of a fork reads its own clock and draws its own random numbers, and
that noise lands in the group-relative advantage as variance. See docs/shim.md for the limits.
"""

from groundhog.shim.api import agent_rng, counters, current, install, shim, uninstall, world_rng
from groundhog.shim.context import outside_branch
from groundhog.shim.keyed import KeyedRandom, keyed_bytes, seed_key
from groundhog.shim.patches import installed
from groundhog.shim.state import BranchState, ShimError

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
