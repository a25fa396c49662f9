"""Groundhog inside the RL frameworks people train with: one small recipe per framework.

Each framework already names a rollout by (group, sample); `RolloutGroups` turns that pair into
the branch `root/<group>/s<sample>`, so siblings of a group share the world's answers and a group
spread over nodes needs no coordinator. None of these frameworks is imported here (each needs a
GPU stack to install): every recipe is written against the integration point the framework
calls, with the same arguments, and tests/examples/test_framework_recipes.py drives each one the
way its framework does. docs/recipes.md explains the mapping.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

try:
    import httpx

    from groundhog.client import Groundhog
    from groundhog.rollout_groups import RolloutGroups
except ModuleNotFoundError as missing:  # the system python3, not the project's venv
    sys.exit(f"{missing}: run it as .venv/bin/python examples/framework_recipes.py (make venv)")

SEARCH = "/search"


async def search_reward(tools: httpx.AsyncClient, world_url: str, query: str) -> float:
    """The toy task every recipe runs: search the world; the reward is the share of the top
    three hits that are studies of the query's own topic."""
    reply = await tools.get(f"{world_url.rstrip('/')}{SEARCH}", params={"q": query})
    reply.raise_for_status()
    top = reply.json()["hits"][:3]
    return sum(hit["title"].lower().startswith(f"{query} study") for hit in top) / 3


# -- verifiers: a sandbox per rollout, told its branch by per-rollout proxy credentials -------

SANDBOX_PROBE = (
    "import os, sys, urllib.request;"
    "reply = urllib.request.urlopen(sys.argv[1], timeout=60);"
    "print(reply.headers['X-Groundhog-Decision'])"
)


async def verifiers_sandbox_group(
    groups: RolloutGroups, world_url: str, example_id: str, rollouts: int
) -> list[str]:
    """verifiers runs a group with `asyncio.gather`; its sandbox runtime gives each rollout its
    own environment. `groups.env(example_id, i)` is that environment: HTTP_PROXY carries the
    rollout's `tape:branch` credentials, so the sandboxed code needs no Groundhog at all."""

    async def sandbox(index: int) -> str:
        env = await asyncio.to_thread(groups.env, example_id, index)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            SANDBOX_PROBE,
            f"{world_url.rstrip('/')}{SEARCH}?q=wind",
            env=env,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await process.communicate()
        return out.decode().strip()

    return list(await asyncio.gather(*(sandbox(index) for index in range(rollouts))))


# -- SkyRL: TrajectoryID(instance_id, repetition_id) ------------------------------------------


@dataclass(frozen=True)
class TrajectoryID:
    """The shape of SkyRL's `skyrl_train.generators.base.TrajectoryID`."""

    instance_id: str
    repetition_id: int


async def skyrl_generate(
    groups: RolloutGroups,
    tools: httpx.AsyncClient,
    world_url: str,
    prompts: Sequence[str],
    trajectory_ids: Sequence[TrajectoryID],
) -> list[float]:
    """A SkyRL generator's batch: one rollout per trajectory id; the instance is the group."""

    async def one(prompt: str, trajectory: TrajectoryID) -> float:
        async with groups.rollout(trajectory.instance_id, trajectory.repetition_id):
            return await search_reward(tools, world_url, prompt)

    return list(await asyncio.gather(*map(one, prompts, trajectory_ids)))


# -- veRL agent loop: sample_index within rollout_n; one group may span nodes -----------------


def verl_identifiers(sample_index: int, rollout_n: int, uid: str | None = None) -> tuple[str, int]:
    """veRL repeats each prompt `rollout_n` times in a row: the prompt's uid (or its position)
    is the group, the repeat is the sample. Deterministic, so every node agrees."""
    return (uid or f"prompt{sample_index // rollout_n}", sample_index % rollout_n)


async def verl_agent_loop_run(
    groups: RolloutGroups,
    tools: httpx.AsyncClient,
    world_url: str,
    *,
    raw_prompt: str,
    sample_index: int,
    rollout_n: int,
    uid: str | None = None,
) -> float:
    """The body of an `AgentLoopBase.run(...)`: wherever it runs, it finds its own branch."""
    group, sample = verl_identifiers(sample_index, rollout_n, uid)
    async with groups.rollout(group, sample):
        return await search_reward(tools, world_url, raw_prompt)


# -- OpenPipe ART: gather_trajectory_groups(TrajectoryGroup(rollout(...) for i in range(n))) --


def art_rollout(
    groups: RolloutGroups, tools: httpx.AsyncClient, world_url: str
) -> Callable[[str, int], Awaitable[float]]:
    """ART's `rollout(model, scenario)` coroutine, keyed by scenario and its index in the group."""

    async def rollout(scenario: str, index: int) -> float:
        async with groups.rollout(f"scenario-{scenario}", index):
            return await search_reward(tools, world_url, scenario)

    return rollout


async def gather_trajectory_groups(groups_of_rollouts: list[list[Awaitable[float]]]) -> list:
    """Stand-in for `art.gather_trajectory_groups`: every rollout of every group at once."""
    flat = await asyncio.gather(*(rollout for group in groups_of_rollouts for rollout in group))
    sizes = [len(group) for group in groups_of_rollouts]
    starts = [sum(sizes[:index]) for index in range(len(sizes))]
    return [list(flat[start : start + size]) for start, size in zip(starts, sizes, strict=True)]


# -- TRL: GRPOTrainer(rollout_func=...) --------------------------------------------------------


def trl_rollout_func(
    gh: Groundhog, world_url: str, num_generations: int, run: str
) -> Callable[..., dict[str, Any]]:
    """A `rollout_func` for `GRPOTrainer`: TRL passes the batch's prompts, each repeated
    `num_generations` times in a row, and calls it once per step from the trainer's thread.

    A tape is one draw of the world, so each step opens its own (`<run>-step<N>`): within the
    step a prompt's generations share the world; the next step draws it afresh.
    """
    step = {"count": 0}

    def rollout_func(prompts: list[str], *args: Any, **kwargs: Any) -> dict[str, Any]:
        step["count"] += 1
        number = step["count"]
        groups = RolloutGroups(gh.open(f"{run}-step{number}", world_seed=number))

        async def run_all() -> list[float]:
            async with groups.async_client() as tools:

                async def one(index: int, prompt: str) -> float:
                    async with groups.rollout(
                        f"p{index // num_generations}", index % num_generations
                    ):
                        return await search_reward(tools, world_url, prompt)

                return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))

        rewards = asyncio.run(run_all())
        return {"prompts": prompts, "env_reward": rewards, "tape": groups.tape.name}

    return rollout_func


# -- NeMo Gym: a session per rollout -----------------------------------------------------------


async def nemo_gym_collect(
    groups: RolloutGroups,
    tools: httpx.AsyncClient,
    world_url: str,
    tasks: Sequence[str],
    num_repeats: int,
) -> dict[str, list[float]]:
    """NeMo Gym's rollout collection runs each task `num_repeats` times, each repeat in its own
    session against the resources server: task is the group, repeat the sample, and every
    request of the session is sent inside that rollout."""

    async def session(task: str, repeat: int) -> float:
        async with groups.rollout(f"task-{task}", repeat):
            return await search_reward(tools, world_url, task)

    results = await asyncio.gather(
        *(session(task, repeat) for task in tasks for repeat in range(num_repeats))
    )
    return {
        task: list(results[index * num_repeats : (index + 1) * num_repeats])
        for index, task in enumerate(tasks)
    }


# -- run them all: `python examples/framework_recipes.py --world-url http://127.0.0.1:8090` ----


async def run_recipes(groups: RolloutGroups, world_url: str, rollouts: int) -> dict[str, Any]:
    """Every async recipe once on one tape, each with `rollouts` samples of its groups."""
    async with groups.async_client() as tools:
        ids = [TrajectoryID("solar", rep) for rep in range(rollouts)]
        skyrl = await skyrl_generate(groups, tools, world_url, ["solar"] * rollouts, ids)
        verl = await asyncio.gather(
            *(
                verl_agent_loop_run(
                    groups, tools, world_url, raw_prompt="battery", sample_index=index,
                    rollout_n=rollouts, uid="battery",
                )
                for index in range(rollouts)
            )
        )  # fmt: skip
        rollout = art_rollout(groups, tools, world_url)
        art = await gather_trajectory_groups([[rollout("wind", i) for i in range(rollouts)]])
        nemo = await nemo_gym_collect(groups, tools, world_url, ["solar"], rollouts)
    sandboxes = await verifiers_sandbox_group(groups, world_url, "wind", rollouts)
    return {
        "skyrl": skyrl,
        "verl": list(verl),
        "art": art[0],
        "nemo_gym": nemo["solar"],
        "verifiers_sandbox_decisions": sorted(sandboxes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolver-url", default=None, help="default GROUNDHOG_RESOLVER_URL")
    parser.add_argument("--proxy-url", default=None, help="default GROUNDHOG_PROXY_URL")
    parser.add_argument("--rollouts", type=int, default=3, help="samples per group")
    parser.add_argument("--world-url", default="http://127.0.0.1:8090")
    args = parser.parse_args(argv)
    with Groundhog(args.resolver_url, proxy_url=args.proxy_url) as gh:
        # A tape is one draw of the world: each run records its own.
        groups = RolloutGroups(gh.open(f"recipes-{uuid.uuid4().hex[:8]}"))
        rewards = asyncio.run(run_recipes(groups, args.world_url, args.rollouts))
        summary = {"tape": groups.tape.name, "rewards": rewards}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
