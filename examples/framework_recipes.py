"""Groundhog at a framework's own (group, sample) identifiers: three patterns, no framework needed.

Every RL framework names a rollout by a group (the prompt, instance, scenario or task its
siblings share) and a sample; `RolloutGroups` turns that pair into the branch
`root/<group>/s<sample>`, so siblings share the world's answers and a group spread over nodes
needs no coordinator. The patterns here are Groundhog's side only — a sandbox per rollout, a
group split over nodes by a flat sample index, tasks repeated n times — and import no framework:
the integrations tested against the real packages are in `groundhog/` (verifiers, SkyRL-Gym,
OpenPipe ART, TRL's `rollout_func`; see docs/recipes.md for each, the version tested and what
is not covered). tests/examples/test_framework_recipes.py drives each pattern through real
resolver, proxy and worldsim processes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Sequence
from typing import Any

try:
    import httpx

    from groundhog.client import Groundhog
    from groundhog.rollout_groups import RolloutGroups
except ModuleNotFoundError as missing:  # the system python3, not the project's venv
    sys.exit(f"{missing}: run it as .venv/bin/python examples/framework_recipes.py (make venv)")

SEARCH = "/search"


async def search_reward(tools: httpx.AsyncClient, world_url: str, query: str) -> float:
    """The toy task every pattern runs: search the world; the reward is the share of the top
    three hits that are studies of the query's own topic."""
    reply = await tools.get(f"{world_url.rstrip('/')}{SEARCH}", params={"q": query})
    reply.raise_for_status()
    top = reply.json()["hits"][:3]
    return sum(hit["title"].lower().startswith(f"{query} study") for hit in top) / 3


# -- a sandbox per rollout, told its branch by per-rollout proxy credentials ------------------

SANDBOX_PROBE = (
    "import os, sys, urllib.request;"
    "reply = urllib.request.urlopen(sys.argv[1], timeout=60);"
    "print(reply.headers['X-Groundhog-Decision'])"
)


async def sandbox_group(
    groups: RolloutGroups, world_url: str, example_id: str, rollouts: int
) -> list[str]:
    """A group whose rollouts each run in a sandbox (a subprocess here) started with
    `groups.env(example_id, i)`: HTTP_PROXY carries the rollout's `tape:branch` credentials, so
    the sandboxed code needs no Groundhog at all."""

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


# -- a group split over nodes: a flat sample index, n samples per prompt ----------------------


def repeated_identifiers(sample_index: int, n: int, uid: str | None = None) -> tuple[str, int]:
    """A batch that repeats each prompt `n` times in a row: the prompt's uid (or its position)
    is the group, the repeat is the sample. Deterministic, so every node agrees."""
    return (uid or f"prompt{sample_index // n}", sample_index % n)


async def rollout_by_index(
    groups: RolloutGroups,
    tools: httpx.AsyncClient,
    world_url: str,
    *,
    prompt: str,
    sample_index: int,
    n: int,
    uid: str | None = None,
) -> float:
    """One rollout of such a batch: wherever it runs, it finds its own branch."""
    group, sample = repeated_identifiers(sample_index, n, uid)
    async with groups.rollout(group, sample):
        return await search_reward(tools, world_url, prompt)


# -- tasks repeated n times, each repeat its own session ----------------------------------------


async def collect_repeats(
    groups: RolloutGroups,
    tools: httpx.AsyncClient,
    world_url: str,
    tasks: Sequence[str],
    repeats: int,
) -> dict[str, list[float]]:
    """Each task run `repeats` times: the task is the group, the repeat the sample, and every
    request of a repeat is sent inside that rollout."""

    async def session(task: str, repeat: int) -> float:
        async with groups.rollout(f"task-{task}", repeat):
            return await search_reward(tools, world_url, task)

    results = await asyncio.gather(
        *(session(task, repeat) for task in tasks for repeat in range(repeats))
    )
    return {
        task: list(results[index * repeats : (index + 1) * repeats])
        for index, task in enumerate(tasks)
    }


# -- run them all: `python examples/framework_recipes.py --world-url http://127.0.0.1:8090` ----


async def run_recipes(groups: RolloutGroups, world_url: str, rollouts: int) -> dict[str, Any]:
    """Every pattern once on one tape, each with `rollouts` samples of its groups."""
    async with groups.async_client() as tools:
        by_index = await asyncio.gather(
            *(
                rollout_by_index(
                    groups, tools, world_url, prompt="battery", sample_index=index,
                    n=rollouts, uid="battery",
                )
                for index in range(rollouts)
            )
        )  # fmt: skip
        repeats = await collect_repeats(groups, tools, world_url, ["solar"], rollouts)
    sandboxes = await sandbox_group(groups, world_url, "wind", rollouts)
    return {
        "by_index": list(by_index),
        "repeats": repeats["solar"],
        "sandbox_decisions": sorted(sandboxes),
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
