"""The world server's settings, built by a function so nothing is read at import time.

One seeded world is configured by a handful of knobs (its default seed, how many branch
sandboxes it will create, whether it names its dependencies, whether it really sleeps). They
come from CLI flags or `GROUNDHOG_WORLDSIM_*` environment variables through one model, so the
CLI, `groundhog worldsim` and tests cannot disagree about defaults.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class WorldConfig(BaseSettings):
    """Settings of one world server."""

    model_config = SettingsConfigDict(env_prefix="GROUNDHOG_WORLDSIM_", extra="forbid")

    seed: int = 0
    sandbox_cap: int = Field(default=1024, ge=1)
    hints: bool = True
    cooperative: bool = True
    world: str = Field(default="research", pattern="^(research|shop)$")
    sleep_latency: bool = False
    max_body_bytes: int = Field(default=65_536, ge=1)
    # The per-call weight of the research world's attention shock (render.ATTENTION_CALL_WEIGHT
    # is the declared world's); bench --noise-curve sweeps it.
    attention_call_weight: float = Field(default=0.6, ge=0.0, le=2.0)
    # Noise inside writes: a publication's answer carries a fresh `reception` draw with this
    # standard deviation (0: no field, the declared world). bench.predict's designs vary it.
    write_noise_sd: float = Field(default=0.0, ge=0.0, le=5.0)
    # The world's clock: every reported latency multiplied by this (1: the declared world).
    clock_scale: float = Field(default=1.0, ge=0.0, le=100.0)


def load_config(**overrides: Any) -> WorldConfig:
    """Settings from the environment, with explicit overrides (e.g. CLI flags) winning."""
    return WorldConfig(**{name: value for name, value in overrides.items() if value is not None})
