"""`with_groundhog` on a real verifiers 0.4 (`verifiers.v1`) environment, through the real stack.

A group is `Env.slots(task, 4)` run with `Env.run_slot` concurrently, as verifiers' runners do;
each episode's tool traffic (the env's own client, and a process started with the task's
`runtime_env()`, as verifiers starts the rollout's runtime) goes through the real proxy and
resolver to a local upstream. The group must be one fork keyed by the task's content hash, each
rollout its own branch, the reads shared (the upstream hit once per address), the one writer's
read after its write refetched, each episode stamped with its group; and an argument keyed only
by its memory address must fail loudly.

Each episode takes its model turn through the real openai SDK, at the endpoint the run's
`ModelContext` names (a mock chat-completions server on loopback, as a trainer's names its
inference server), and never through Groundhog: the model is the policy, not the world. The
env's `run()` then does the tool calls a harness would and records the agent's trace (a harness
program would bootstrap its own script environment with uv, which needs the network).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")

import openai  # noqa: E402  (a verifiers dependency)

from groundhog.client import Groundhog  # noqa: E402
from groundhog.verifiers_adapter import current_rollout_branch, with_groundhog  # noqa: E402
from groundhog.verifiers_v1 import UnstableGroupKey  # noqa: E402
from tests.groundhog.model_server import ModelServer, serving_model  # noqa: E402
from tests.groundhog.upstream import Upstream  # noqa: E402
from tests.support.servers import REPO_ROOT  # noqa: E402

# What a rollout's runtime process does: fetch through HTTP(S)_PROXY from its environment.
RUNTIME_PROGRAM = """
import json, sys, httpx
response = httpx.get(sys.argv[1], timeout=60)
print(json.dumps({"body": response.text,
                  "decision": response.headers.get("X-Groundhog-Decision")}))
"""


# The first episode of each group to reach its write is the group's one writer.
WRITERS: dict[str, str] = {}


class FetchEnvConfig(vf.EnvConfig):
    # A local runtime: the default (a Prime sandbox) would need a tunnel and a login.
    solver: vf.AgentConfig = vf.AgentConfig(runtime={"type": "subprocess"})


class FetchEnv(vf.Env[FetchEnvConfig]):
    async def run(self, task: Any, agents: Any) -> None:
        # The model turn, at the run's endpoint (the solver's resolved client and model).
        solver = agents.solver.config
        async with openai.AsyncOpenAI(base_url=solver.client.base_url, api_key="none") as model:
            completion = await model.chat.completions.create(
                model=solver.model, messages=[{"role": "user", "content": task.data.prompt}]
            )
        async with self.groundhog.async_httpx_client() as http:
            page = await http.get(task.data.url)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", RUNTIME_PROGRAM, task.data.url + "/runtime",
            env={**os.environ, **task.runtime_env()}, cwd=REPO_ROOT,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await process.communicate()
        runtime = json.loads(out)
        branch = current_rollout_branch()
        assert branch is not None
        wrote = WRITERS.setdefault(branch.group, branch.path) == branch.path
        async with self.groundhog.async_httpx_client() as http:
            written = await http.post(task.data.url + "/notes", content=b"mine") if wrote else None
            notes = await http.get(task.data.url + "/notes")
        trace = vf.Trace(
            task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key,
                              hash=task.hash),
            agent=vf.AgentInfo(config=agents.solver.config, name="solver"),
            info={"answer": completion.choices[0].message.content,
                  "tool": page.text, "tool_decision": page.headers["X-Groundhog-Decision"],
                  "runtime": runtime["body"], "runtime_decision": runtime["decision"],
                  "wrote": wrote, "notes": notes.text,
                  "notes_decision": notes.headers["X-Groundhog-Decision"],
                  "write_decision": written and written.headers["X-Groundhog-Decision"]},
            is_completed=True, ok=True,
        )  # fmt: skip
        trace.record_reward("served", 1.0)
        # The trace joins the episode as an agent's finished run does (`_EpisodeAgent.run`
        # appends to the episode's list).
        agents.solver._completed.append(trace)


@pytest.fixture
def make_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    """verifiers imports a taskset by a top-level module name: this directory joins sys.path."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    tasksets = importlib.import_module("vf_fetch_taskset")

    def make(url: str) -> Any:
        tasksets.FetchTaskset.url = url
        return FetchEnv(FetchEnvConfig(taskset={"id": "vf_fetch_taskset"}))

    return make


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with serving_model() as server:
        yield server


def ctx(base_url: str = "http://127.0.0.1:9") -> Any:
    """The run's model context (the default URL is never called: only the group key reads it)."""
    return vf.ModelContext(model="mock-model", client=vf.EvalClientConfig(base_url=base_url))


async def run_group(env: Any, task: Any, size: int, model_url: str) -> list[Any]:
    async with env.serving():
        slots = env.slots(task, size)
        return await asyncio.gather(*(env.run_slot(slot, ctx(model_url)) for slot in slots))


def test_a_group_of_rollouts_is_one_fork_keyed_by_the_task_and_shares_the_world(
    gh_proxied: Groundhog,
    tape_name: str,
    http_upstream: Upstream,
    make_env: Any,
    model_server: ModelServer,
) -> None:
    url = f"{http_upstream.url}/{tape_name}/page"
    env = with_groundhog(make_env(url), tape=gh_proxied.open(tape_name, world_seed=4))
    (task,) = list(env.taskset)

    episodes = asyncio.run(run_group(env, task, 4, model_server.url))

    assert [e.ok for e in episodes] == [True] * 4, [e.errors for e in episodes]
    infos = [e.traces[0].info for e in episodes]
    # One model turn per episode, straight to the model: each its own sample, none on a branch.
    assert [r["model"] for r in model_server.requests] == ["mock-model"] * 4
    assert all(r["messages"][0]["content"] == task.data.prompt for r in model_server.requests)
    assert all("x-groundhog-branch" not in headers for headers in model_server.headers)
    events = list(gh_proxied.iter_events(tape_name))  # 4 pages, 4 runtime reads, a write, 4 notes
    assert len(events) == 13 and not [e for e in events if "/chat/completions" in e.url]
    assert len({info["answer"] for info in infos}) == 4
    assert len({info["tool"] for info in infos}) == 1  # one draw of the world for the group
    assert len({info["runtime"] for info in infos}) == 1
    decisions = sorted(info["tool_decision"] for info in infos)
    assert decisions == ["recorded", "shared", "shared", "shared"]
    assert sorted(info["runtime_decision"] for info in infos) == decisions
    assert http_upstream.count(f"/{tape_name}/page") == 1
    assert http_upstream.count(f"/{tape_name}/page/runtime") == 1
    # One writer: its write went live and its read after it was fetched again, while its
    # siblings, who wrote nothing, share the unwritten notes.
    (writer,) = [info for info in infos if info["wrote"]]
    readers = [info for info in infos if not info["wrote"]]
    assert writer["write_decision"] == "write" and writer["notes_decision"] == "refetched"
    assert sorted(info["notes_decision"] for info in readers) == ["recorded", "shared", "shared"]
    assert len({info["notes"] for info in readers}) == 1
    assert readers[0]["notes"] != writer["notes"]
    assert http_upstream.count(f"/{tape_name}/page/notes") == 3  # two reads and the write
    branches = [b.path for b in env.groundhog.branches]
    groups = {b.group for b in env.groundhog.branches}
    assert len(set(branches)) == 4 and len(groups) == 1
    (group,) = groups
    assert {e.group.id for e in episodes} == {group}
    assert all(path.startswith(group + "/") for path in branches)
    report = gh_proxied.report(tape_name)
    assert sum(report.branches[path].reads_shared for path in branches) == 8

    # The same task content again (a fresh Task object, as a new step would load it) keys the
    # same group; its key is the task's content hash, not its repr.
    (again,) = list(env.taskset)
    assert again is not task and again.hash == task.hash
    key = env.groundhog.group_key
    assert key(env.run_episode, (again, ctx()), {}) == key(env.run_episode, (task, ctx()), {})
    other = task.with_data(url=url + "/other")
    assert key(env.run_episode, (other, ctx()), {}) != key(env.run_episode, (task, ctx()), {})


class Opaque:
    """A task-like argument with no content to key on: repr is `<… object at 0x…>`."""


def test_an_argument_keyed_only_by_its_address_fails_loudly(
    gh_proxied: Groundhog, tape_name: str
) -> None:
    class Env:
        def run_rollout(self, job: object) -> str:
            return "never"

    env = with_groundhog(Env(), tape=gh_proxied.open(tape_name, world_seed=5))
    with pytest.raises(UnstableGroupKey, match="names a memory address"):
        env.run_rollout(Opaque())
    assert gh_proxied.list_branches(tape_name)[0].children == []  # nothing was forked
