"""`with_groundhog` on verifiers' own harness path, default settings, through the real stack.

A `SingleAgentEnv` with the `null` harness (verifiers' chat program, run by the runtime) on the
`subprocess` runtime, two slots of one task, the shim on: verifiers names each rollout's runtime
directory by `trace.id` (a `uuid4`), so siblings whose uuid4 agree collide on it. The harness
program reaches the model at the interception endpoint verifiers serves on loopback, and the
interception calls the run's `ModelContext` URL: neither is the world, so neither lands on the tape.

The runtime's script environment is prepared the way a warm worker has it (verifiers' own
per-process cache of prepared uv scripts, pointing at this interpreter, which has the chat
program's dependencies): preparing it cold downloads packages from PyPI.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")

from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE  # noqa: E402
from verifiers.v1.runtimes.backends import subprocess as vf_subprocess  # noqa: E402

from groundhog.client import Groundhog  # noqa: E402
from groundhog.verifiers_adapter import with_groundhog  # noqa: E402
from tests.groundhog.model_server import ModelServer, serving_model  # noqa: E402


@pytest.fixture
def warm_runtime_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """verifiers' cache in a temporary directory, with the chat program's script prepared."""
    cache = tmp_path / "verifiers-cache"
    scripts = cache / "runtimes" / "scripts"
    scripts.mkdir(parents=True)
    monkeypatch.setattr(vf_subprocess, "CACHE_DIR", cache)
    monkeypatch.setattr(vf_subprocess.SubprocessBackend, "scripts_dir", str(scripts))
    script = scripts / f"{hashlib.sha256(CHAT_PROGRAM_SOURCE.encode()).hexdigest()}.py"
    script.write_text(CHAT_PROGRAM_SOURCE)
    monkeypatch.setitem(vf_subprocess._UV_INTERPRETERS, str(script), sys.executable)
    return cache


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with serving_model() as server:
        yield server


def make_env() -> Any:
    agent = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"})
    config = vf.SingleAgentEnvConfig(taskset={"id": "vf_fetch_taskset"}, agent=agent)
    return vf.SingleAgentEnv(config)


async def run_group(env: Any, size: int, model_url: str) -> list[Any]:
    (task,) = list(env.taskset)
    ctx = vf.ModelContext(model="mock-model", client=vf.EvalClientConfig(base_url=model_url))
    async with env.serving():
        slots = env.slots(task, size)
        return await asyncio.gather(*(env.run_slot(slot, ctx) for slot in slots))


def test_the_null_harness_on_the_subprocess_runtime_runs_every_slot_with_the_default_shim(
    gh_proxied: Groundhog,
    tape_name: str,
    warm_runtime_cache: Path,
    model_server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # verifiers imports the taskset
    env = with_groundhog(make_env(), tape=gh_proxied.open(tape_name, world_seed=11))

    episodes = asyncio.run(run_group(env, 2, model_server.url))

    assert [e.ok for e in episodes] == [True, True], [e.errors for e in episodes]
    trace_ids = [e.traces[0].id for e in episodes]
    assert len(set(trace_ids)) == 2  # one runtime directory each
    assert [r["model"] for r in model_server.requests] == ["mock-model"] * 2
    # The harness's turns went to the interception and on to the model, never onto the tape.
    assert all("x-groundhog-branch" not in headers for headers in model_server.headers)
    events = list(gh_proxied.iter_events(tape_name))
    assert not [e for e in events if "/chat/completions" in e.url], [e.url for e in events]
    assert len({b.path for b in env.groundhog.branches}) == 2
