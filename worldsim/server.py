"""Run one world server with uvicorn: the entry point `python -m worldsim` and `groundhog worldsim`.

The server must put nothing host-derived in its answers, so uvicorn's `Date` and `Server`
headers are switched off here; otherwise two recordings of the same world would differ by the
wall clock.
"""

from __future__ import annotations

import logging

import uvicorn

from worldsim.app import create_app
from worldsim.config import load_config

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8090


def run(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    seed: int | None = None,
    *,
    sandbox_cap: int | None = None,
    hints: bool | None = None,
    cooperative: bool | None = None,
    world: str | None = None,
    sleep_latency: bool | None = None,
    max_body_bytes: int | None = None,
    attention_call_weight: float | None = None,
    write_noise_sd: float | None = None,
    clock_scale: float | None = None,
    log_level: str = "warning",
) -> None:
    """Serve a world until interrupted; unset options come from `GROUNDHOG_WORLDSIM_*`."""
    config = load_config(
        seed=seed,
        sandbox_cap=sandbox_cap,
        hints=hints,
        cooperative=cooperative,
        world=world,
        sleep_latency=sleep_latency,
        max_body_bytes=max_body_bytes,
        attention_call_weight=attention_call_weight,
        write_noise_sd=write_noise_sd,
        clock_scale=clock_scale,
    )
    logger.info("worldsim seed %s on %s:%s", config.seed, host, port)
    uvicorn.run(
        create_app(config),
        host=host,
        port=port,
        log_level=log_level,
        date_header=False,
        server_header=False,
        access_log=False,
    )
