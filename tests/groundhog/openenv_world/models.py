"""The world environment's action and observation (openenv-core's pydantic base classes)."""

from __future__ import annotations

from openenv.core.env_server.types import Action, Observation
from pydantic import Field


class WorldAction(Action):
    """Call one of the world's tools: `read` (a GET) or `write` (a POST of `body`)."""

    tool: str = Field(..., description="read or write")
    path: str = Field(..., description="the world resource, e.g. /notes")
    body: str = Field(default="", description="what a write sends")


class WorldObservation(Observation):
    """What the tool answered, and how Groundhog decided it (`recorded`, `shared`, …)."""

    text: str = Field(default="")
    decision: str = Field(default="")
    episode_id: str = Field(default="")
    draw: float = Field(default=0.0, description="random.random() in the server at reset")
