"""SkyRL-Gym environments on Groundhog branches: their tool groups' HTTP goes through the proxy.

A SkyRL-Gym text environment (`skyrl_gym.make("search", ...)`) calls the world from its tool
groups — `SearchToolGroup` posts every query to a retrieval server through one `requests`
session shared by every environment instance of the process (a class-level pool). Left alone,
every trajectory of a group draws its own search results and none of them goes through
Groundhog. `route_tool_groups` gives the environment's tool groups one session through the
proxy that names, on each request, the branch of the rollout it is sent from (SkyRL's
`TrajectoryID(instance_id, repetition_id)` is `RolloutGroups.rollout_sync(instance, repetition)`).

Nothing here imports skyrl_gym: tool groups are found on the environment (`tool_groups`) and
their `session` attribute replaced.
"""

from __future__ import annotations

from typing import Any

import requests

from groundhog.rollout_groups import RolloutGroups


def route_tool_groups(env: Any, groups: RolloutGroups) -> Any:
    """Point every tool group of `env` that holds a requests session at the proxy; returns env.

    Fails loudly if none does: a tool group that makes its own connections would reach the
    world around Groundhog, silently."""
    session = groups.requests_session()
    routed = []
    for group in getattr(env, "tool_groups", None) or []:
        if isinstance(getattr(group, "session", None), requests.Session):
            group.session = session
            routed.append(getattr(group, "name", type(group).__name__))
    if not routed:
        raise TypeError(
            f"{type(env).__name__} has no tool group with a requests session (`tool_groups`, "
            "each with `.session`): route its HTTP through the proxy another way, e.g. "
            "HTTP(S)_PROXY from groups.env(instance_id, repetition_id) in its process"
        )
    return env
