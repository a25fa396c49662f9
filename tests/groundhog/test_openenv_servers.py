"""OpenEnv environment servers on Groundhog branches, through openenv-core and the real stack.

A small OpenEnv environment (tests/groundhog/openenv_world: openenv-core's `Environment`,
`create_app` and `EnvClient`, laid out as `openenv init` lays one out) whose step() calls a
world's tools over HTTP: a read (GET) and a write (POST). A group of four rollouts, each with its
own server started by OpenEnv's `UVProvider` (`uv run --isolated --project … -- uvicorn
server.app:app`, as `EnvClient.from_env(..., use_docker=False)` starts one) with the branch's
environment as its `env_vars`, each stepped by its own WebSocket client. The world answers every
live GET with fresh random bytes, so the siblings see one page only if Groundhog shared it: the
world must be hit once per address, and the writer's read after its write must go live again.

The uv project declares no dependencies, so `uv run` needs no index: `uvicorn`, openenv-core and
the environment come from this interpreter's environment, found on PATH (preparing a project's
dependencies cold downloads them from PyPI).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv.core", reason="the openenv extra is not installed")

from openenv.core.containers.runtime import UVProvider

from groundhog.client import Groundhog
from groundhog.openenv_servers import openenv_rollout
from groundhog.rollout_groups import RolloutGroups
from tests.groundhog.openenv_world.client import WorldEnv
from tests.groundhog.openenv_world.models import WorldAction
from tests.groundhog.random_world import World, serving_random_world
from tests.support.servers import REPO_ROOT

SIZE = 4
WRITER = 1
# Each server imports openenv-core, which imports fastmcp and gradio: seconds of CPU each, and
# four at once on a shared CI machine.
READY_TIMEOUT_S = 300.0
APP = "tests.groundhog.openenv_world.server.app:app"

PROJECT = """\
[project]
name = "groundhog-openenv-world"
version = "0.1.0"
requires-python = ">=3.12"
dependencies = []

[tool.uv]
package = false
"""


@pytest.fixture
def world() -> Iterator[World]:
    with serving_random_world() as state:
        yield state


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment's uv project, with `uv` and this venv's `uvicorn` on PATH."""
    root = tmp_path / "world-env"
    root.mkdir()
    (root / "pyproject.toml").write_text(PROJECT)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    if shutil.which("uv", path=path) is None:
        pytest.fail("OpenEnv's UVProvider runs `uv`: the openenv extra installs it")
    monkeypatch.setenv("PATH", path)
    return root


def server_env_vars(world_url: str) -> dict[str, str]:
    """What the environment's own deployment sets: where the world is, where its code is."""
    return {
        "WORLD_URL": world_url,
        "PYTHONPATH": str(REPO_ROOT),
        "WORLD_TEST_PARENT": str(os.getpid()),  # the server dies with this test
        "UV_OFFLINE": "1",  # nothing to download: the project declares no dependencies
    }


async def rollout(
    groups: RolloutGroups, project: Path, world_url: str, sample: int
) -> dict[str, Any]:
    provider = UVProvider(project_path=str(project), app=APP, host="127.0.0.1")
    env_vars = server_env_vars(world_url)
    async with openenv_rollout(
        groups, "task-7", sample, WorldEnv, provider,
        env_vars=env_vars, ready_timeout_s=READY_TIMEOUT_S,
    ) as env:  # fmt: skip
        reset = await env.reset()
        page = await env.step(WorldAction(tool="read", path="/page"))
        wrote = None
        if sample == WRITER:
            wrote = await env.step(WorldAction(tool="write", path="/notes", body="mine"))
        notes = await env.step(WorldAction(tool="read", path="/notes"))
        state = await env.state()
    return {
        "episode": reset.observation.episode_id,
        "page": page.observation.text,
        "page_decision": page.observation.decision,
        "write_decision": wrote.observation.decision if wrote else None,
        "notes": notes.observation.text,
        "notes_decision": notes.observation.decision,
        "steps": state.step_count,
        "stopped": _stopped(provider),
    }


def _stopped(provider: UVProvider) -> bool:
    try:
        provider.base_url  # noqa: B018  (raises once the provider has stopped its server)
    except RuntimeError:
        return True
    return False


@pytest.mark.slow
@pytest.mark.timeout(2 * READY_TIMEOUT_S)
def test_a_group_of_openenv_servers_shares_the_world_and_the_writer_refetches(
    gh_proxied: Groundhog, tape_name: str, world: World, project: Path
) -> None:
    groups = RolloutGroups(gh_proxied.open(tape_name, world_seed=12))  # default settings
    base = f"{world.url}/{tape_name}"

    async def group() -> list[dict[str, Any]]:
        return await asyncio.gather(*(rollout(groups, project, base, i) for i in range(SIZE)))

    results = asyncio.run(group())

    # Each rollout had its own server (its own episode) and was stepped to the end.
    assert len({r["episode"] for r in results}) == SIZE
    assert [r["steps"] for r in results] == [3 if i == WRITER else 2 for i in range(SIZE)]
    assert all(r["stopped"] for r in results)
    # Siblings read one draw of the world, byte for byte: it was fetched once.
    assert len({r["page"] for r in results}) == 1
    assert sorted(r["page_decision"] for r in results) == ["recorded"] + ["shared"] * 3
    assert world.hits[("GET", f"/{tape_name}/page")] == 1
    # The writer's write went live, and its read after it was fetched again...
    writer = results[WRITER]
    readers = [r for i, r in enumerate(results) if i != WRITER]
    assert writer["write_decision"] == "write"
    assert world.hits[("POST", f"/{tape_name}/notes")] == 1
    assert writer["notes_decision"] == "refetched"
    # ...while the siblings, who wrote nothing, share the unwritten notes.
    assert sorted(r["notes_decision"] for r in readers) == ["recorded", "shared", "shared"]
    assert len({r["notes"] for r in readers}) == 1 and writer["notes"] != readers[0]["notes"]
    assert world.hits[("GET", f"/{tape_name}/notes")] == 2
    # On the tape: the world's traffic of the four branches, and none of the client's.
    events = list(gh_proxied.iter_events(tape_name))
    assert len(events) == 2 * SIZE + 1
    assert {e.url.split(tape_name)[0] for e in events} == {world.url + "/"}
    paths = {f"root/task-7/s{i}" for i in range(SIZE)}
    assert {b.path for b in gh_proxied.list_branches(tape_name)} == {"root", "root/task-7", *paths}
