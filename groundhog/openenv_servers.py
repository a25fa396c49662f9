"""OpenEnv environment servers on Groundhog branches: one server process per rollout.

OpenEnv runs an environment as a server (FastAPI; one WebSocket session per `EnvClient`) whose
tools call the world from inside the server process. One server per client is OpenEnv's own
model — a provider starts one container or `uv run` process per client (`EnvClient.from_env`,
`from_docker_image`) and hands it `env_vars` — so the server is what carries a rollout's
identity: started with the branch's environment (HTTP(S)_PROXY with tape:branch credentials,
the CA, NO_PROXY), every request its tools send is recorded and shared on that branch, and the
environment's code names no Groundhog at all.

`openenv_rollout` does that for one (group, sample) of `RolloutGroups`, and two things around
it that OpenEnv's `from_env` does not:

- the provider's start and health wait run in a thread, so a group's servers start side by
  side (`from_env` blocks the event loop on `time.sleep` while it polls `/health`);
- the start, the health polling and the WebSocket connection run outside the rollout's shim:
  under it `time.sleep`/`asyncio.sleep` are virtual, so OpenEnv's poll would spin to its
  deadline at once and the client's keepalive task (created at connect) would ping without
  pause. Steps run inside the rollout, as any tool call of an in-process rollout does.

The server process runs without the shim (as `groups.env()` and `groundhog run` without
`--shim` give it): a process-wide shim would make the server's own event-loop sleeps virtual
(uvicorn's tick, the WebSocket keepalive), so its clock would race and draw randomness in no
fixed order. The EnvClient reaches its server directly (OpenEnv forces NO_PROXY for loopback
servers): that traffic is the agent's, not the world's.

Nothing here imports openenv: a provider is anything with `RuntimeProvider`'s methods
(`UVProvider`; a Docker provider's container cannot reach a loopback proxy and is not covered).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

from groundhog.branch import Branch
from groundhog.rollout_groups import RolloutGroups
from groundhog.shim.context import outside_branch

READY_TIMEOUT_S = 120.0


class RuntimeProvider(Protocol):
    """OpenEnv's `RuntimeProvider` (openenv.core.containers.runtime), as used here."""

    def start(self, *, env_vars: dict[str, str] | None = None) -> str: ...

    def wait_for_ready(self, timeout_s: float = ...) -> None: ...

    def stop(self) -> None: ...


class EnvClient(Protocol):
    """OpenEnv's `EnvClient`, as used here: connect, and close (which stops its provider)."""

    async def connect(self) -> Any: ...

    async def close(self) -> None: ...


def server_env(
    branch: Branch,
    env_vars: Mapping[str, str] | None = None,
    *,
    model_urls: list[str] | None = None,
) -> dict[str, str]:
    """The `env_vars` for the server of `branch`: yours, then the branch's over them.

    Your NO_PROXY entries are kept (added to the branch's), and `model_urls` — the policy's
    endpoints the environment calls, if any — bypass the proxy like OPENAI_BASE_URL does.
    """
    own = dict(env_vars or {})
    bypass = [h.strip() for h in own.get("NO_PROXY", own.get("no_proxy", "")).split(",")]
    return {**own, **branch.env(no_proxy=[h for h in bypass if h], model_urls=model_urls)}


def _start(provider: RuntimeProvider, env: dict[str, str], ready_timeout_s: float) -> str:
    try:
        base_url = provider.start(env_vars=env)
        provider.wait_for_ready(timeout_s=ready_timeout_s)
    except BaseException:
        provider.stop()
        raise
    return base_url


@contextlib.asynccontextmanager
async def openenv_rollout[ClientT: EnvClient](
    groups: RolloutGroups,
    group: object,
    sample: int,
    client_cls: Callable[..., ClientT],
    provider: RuntimeProvider,
    *,
    env_vars: Mapping[str, str] | None = None,
    model_urls: list[str] | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> AsyncIterator[ClientT]:
    """Rollout `sample` of `group`: its own environment server, started by `provider` with
    the branch's environment, and a connected `client_cls` to step it; at exit the client is
    closed and the server stopped.

        async with openenv_rollout(groups, task_id, i, MyEnv, UVProvider(project_path=p)) as env:
            result = await env.reset()
            result = await env.step(MyAction(...))
    """
    with outside_branch():
        branch = await asyncio.to_thread(groups.branch, group, sample)
        env = await asyncio.to_thread(server_env, branch, env_vars, model_urls=model_urls)
        # to_thread copies this context: the thread polls with real sleeps too.
        base_url = await asyncio.to_thread(_start, provider, env, ready_timeout_s)
        client = client_cls(base_url=base_url, provider=provider)
        try:
            await client.connect()
        except BaseException:
            await client.close()
            raise
    try:
        async with groups.rollout(group, sample):
            yield client
    finally:
        with outside_branch():
            await client.close()
