"""with_groundhog: each rollout of a verifiers-style env runs on its own sibling branch.

Runs a duck-typed environment (no verifiers import) whose rollouts call a real upstream through
the real proxy and resolver, the way verifiers runs a group: `asyncio.gather` over rollouts.
"""

from __future__ import annotations

import asyncio
import random
import time
import warnings
from typing import Any

import httpx
import pytest

from groundhog.client import Groundhog
from groundhog.errors import ForkWarning
from groundhog.verifiers_adapter import (
    RolloutBranch,
    branch_headers,
    current_rollout_branch,
    default_group_key,
    use_branch,
    with_groundhog,
)
from tests.groundhog.upstream import Upstream


class AsyncToyEnv:
    """Shaped like verifiers' Environment: `rollout(client, model, prompt, answer, …)`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http: httpx.AsyncClient | None = None

    async def rollout(
        self, client: Any, model: str, prompt: str, answer: str = "", sampling_args=None
    ) -> tuple[list[dict[str, str]], dict[str, Any]]:
        assert self.http is not None
        response = await self.http.get(f"{self.url}/noise/{prompt}")
        state = {
            "serial": response.json()["serial"],
            "decision": response.headers.get("x-groundhog-decision"),
            "clock": time.time(),
            "draw": random.random(),
        }
        return [{"role": "assistant", "content": "ok"}], state

    async def generate(self, prompts: list[str], per_prompt: int) -> list[Any]:
        calls = [self.rollout(object(), "policy", p) for p in prompts for _ in range(per_prompt)]
        return await asyncio.gather(*calls)


class SyncToyEnv:
    def __init__(self, url: str) -> None:
        self.url = url
        self.session = None

    def run_rollout(self, prompt: str) -> dict[str, Any]:
        response = self.session.get(f"{self.url}/sync/{prompt}")
        return {"serial": response.json()["serial"], "sent": current_rollout_branch()}


def test_each_async_rollout_gets_a_sibling_branch_and_shares_the_world(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    tape = gh_proxied.open(tape_name, world_seed=5)
    env = with_groundhog(AsyncToyEnv(http_upstream.url), tape=tape)

    async def main() -> list[Any]:
        async with env.groundhog.async_httpx_client() as http:
            env.http = http
            return await env.generate([f"{tape_name}-a", f"{tape_name}-b"], 3)

    results = asyncio.run(main())
    states = [state for _, state in results]
    branches = [state["groundhog"]["branch"] for state in states]
    assert len(set(branches)) == 6
    groups = {path.rsplit("/", 1)[0] for path in branches}
    assert len(groups) == 2 and all(group.count("/") == 1 for group in groups)
    for prompt, group_states in (("a", states[:3]), ("b", states[3:])):
        assert len({s["serial"] for s in group_states}) == 1, "one world draw per group"
        assert sorted(s["decision"] for s in group_states) == ["recorded", "shared", "shared"]
        assert http_upstream.count(f"/noise/{tape_name}-{prompt}") == 1
    siblings = states[:3]
    assert len({(s["clock"], s["draw"]) for s in siblings}) == 1, "shim keyed by the world seed"
    assert branch_headers() == {} and current_rollout_branch() is None
    assert [b.path for b in env.groundhog.branches] != []


def test_sync_rollouts_name_their_branch_through_requests(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    env = with_groundhog(
        SyncToyEnv(http_upstream.url),
        tape=tape_name,
        resolver_url=gh_proxied.resolver_url,
        proxy_url=gh_proxied.proxy_url,
        world_seed=3,
    )
    env.session = env.groundhog.requests_session()
    first = env.run_rollout(tape_name)
    env.groundhog.new_groups()
    second = env.run_rollout(tape_name)
    assert first["sent"].group != second["sent"].group  # a new step forks a new group
    assert first["serial"] == second["serial"]  # same address on the tape: shared
    assert http_upstream.count(f"/sync/{tape_name}") == 1
    events, _ = gh_proxied.events(tape_name, branch=second["sent"].path)
    assert [event.decision for event in events] == ["shared"]


def test_an_env_without_rollout_methods_is_refused(gh_proxied: Groundhog, tape_name: str) -> None:
    with pytest.raises(TypeError, match="none of the rollout methods rollout, a_rollout"):
        with_groundhog(object(), tape=gh_proxied.open(tape_name))


def test_group_keys_follow_example_id_then_prompt() -> None:
    def rollout(client: Any, model: str, prompt: str, answer: str = "") -> None: ...

    def modern(rollout_input: dict[str, Any], client: Any) -> None: ...

    key = default_group_key(rollout, (object(), "m", "2+2?"), {"answer": "4"})
    assert key == default_group_key(rollout, (object(), "other-model", "2+2?", "4"), {})
    assert key != default_group_key(rollout, (object(), "m", "3+3?", "4"), {})
    assert default_group_key(modern, ({"example_id": 9, "prompt": "x"}, object()), {}) == (
        "example_id=9"
    )


def test_headers_follow_the_context() -> None:
    branch = RolloutBranch("t", "root/b0/b1", "root/b0", 1)
    with use_branch(branch):
        assert branch_headers() == {"X-Groundhog-Tape": "t", "X-Groundhog-Branch": "root/b0/b1"}
    assert branch_headers() == {}


def test_every_task_gets_its_own_group_without_a_fork_warning(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    env = with_groundhog(SyncToyEnv(http_upstream.url), tape=gh_proxied.open(tape_name))
    env.session = env.groundhog.requests_session()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sent = [env.run_rollout(f"{tape_name}-{task}")["sent"] for task in range(3) for _ in "ab"]
    assert [str(w.message) for w in caught if issubclass(w.category, ForkWarning)] == []
    groups = [branch.group for branch in sent]
    assert len(set(groups)) == 3 and groups[0::2] == groups[1::2]
