"""The environment's client, as `openenv init`'s template writes one: openenv-core's
`EnvClient` (one WebSocket session per client) with the three conversions it leaves abstract."""

from __future__ import annotations

from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import State

from tests.groundhog.openenv_world.models import WorldAction, WorldObservation


class WorldEnv(EnvClient[WorldAction, WorldObservation, State]):
    def _step_payload(self, action: WorldAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[WorldObservation]:
        observation = WorldObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(observation, reward=payload.get("reward"), done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)
