"""The FastAPI app, as `openenv init`'s template makes it: `uvicorn server.app:app`.

A test's server must die with the test: the test names its own pid in WORLD_TEST_PARENT, and the
server leaves a watcher that stops it when that process is gone (groundhog/lifetime.py), however
the test ends.
"""

from __future__ import annotations

import os

from openenv.core.env_server.http_server import create_app

from groundhog import lifetime
from tests.groundhog.openenv_world.models import WorldAction, WorldObservation
from tests.groundhog.openenv_world.server.world_environment import WorldEnvironment

if os.environ.get("WORLD_TEST_PARENT"):
    parent = int(os.environ["WORLD_TEST_PARENT"])
    started = lifetime.start_time(parent)
    if started is not None:
        lifetime.leave_watcher(parent, started)

app = create_app(
    WorldEnvironment, WorldAction, WorldObservation, env_name="world", max_concurrent_envs=1
)
