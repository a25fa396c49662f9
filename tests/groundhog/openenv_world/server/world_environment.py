"""An environment whose step() calls the world's tools over HTTP, as OpenEnv tool envs do.

The world's address comes from the server's environment (WORLD_URL); the HTTP client trusts the
environment's proxy settings, so a server started with a branch's env_vars reaches the world
through Groundhog's proxy on that branch, and nothing here names Groundhog.
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

import httpx
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

from tests.groundhog.openenv_world.models import WorldAction, WorldObservation


class WorldEnvironment(Environment[WorldAction, WorldObservation, State]):
    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._world = os.environ["WORLD_URL"]

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> WorldObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return WorldObservation(
            text="ready", episode_id=self._state.episode_id or "", draw=random.random()
        )

    def step(
        self, action: WorldAction, timeout_s: float | None = None, **kwargs: Any
    ) -> WorldObservation:
        self._state.step_count += 1
        with httpx.Client(timeout=timeout_s or 60) as http:
            if action.tool == "write":
                reply = http.post(self._world + action.path, content=action.body.encode())
            else:
                reply = http.get(self._world + action.path)
        reply.raise_for_status()
        return WorldObservation(
            text=reply.text,
            decision=reply.headers.get("X-Groundhog-Decision", ""),
            episode_id=self._state.episode_id or "",
            reward=1.0,
        )

    @property
    def state(self) -> State:
        return self._state
