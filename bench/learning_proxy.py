"""The learning measurements' groups, run through the real proxy stack.

bench/learning.py's two phases need rewards the way a trainer would get them: every group a
tape of its own, forked into sibling branches that run the agent concurrently through the
proxy against the live (uncooperative) research world, in condition (A), (B) or (C). The SNR
phase runs, per declared policy state and world, one group per condition on the same world
seed with the same sampled actions; the efficiency phase trains every seed of every condition
at once (bench/grpo_fresh.py's layout: a seed's steps are sequential and latency-bound).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np

from bench import harness
from bench import policy_gradient as pg
from bench.collect import rules_for
from bench.groups import RunContext, cell_context, run_group
from bench.world_client import WorldControl
from groundhog.client import Groundhog
from worldsim.agent import AgentError

logger = logging.getLogger(__name__)
CONDITIONS: tuple[str, ...] = ("naive", "replay", "groundhog")
AGENT_SEED_BASE = 11  # the agents' seeds: one per (world, branch), the same in every condition
SNR_WORKERS = 6  # groups at once in the SNR phase: each waits on three processes
# Seeds training at once: the first declared run trained all 60 at once on a machine loaded by
# others (load average 20 on two cores) and the resolver missed the proxy's 5 s deadline.
TRAIN_WORKERS = 16
# A group whose services failed to answer (an HTTP 503 from the proxy, a timeout) is run again
# on a fresh tape: the same world and actions, so a retry changes no draw; retries are counted.
ATTEMPTS = 3
RETRIES: list[str] = []


@contextlib.contextmanager
def research_context(run_id: str) -> Iterator[RunContext]:
    """Worldsim (uncooperative research), the resolver and the proxy, started and stopped."""
    cells = [("research", "uncooperative")]
    with harness.started_services(cells=cells) as services:
        world_url = services.world("uncooperative", "research")
        with (
            Groundhog(services.resolver_url, proxy_url=services.proxy_url) as admin,
            WorldControl(world_url) as world,
        ):
            yield cell_context(
                admin,
                world,
                world_url=world_url,
                resolver_url=services.resolver_url,
                proxy_url=services.proxy_url,
                run_id=run_id,
                kind="research",
                cooperative=False,
            )


def proxy_sampler(
    context: RunContext, condition: str, strategies: Sequence[str], label: str
) -> pg.Sampler:
    """A group of the chosen strategies on one world through the proxy, as ``condition``."""
    model = "closure" if condition == "naive" else "rules"
    counter = itertools.count()

    def sample(world_seed: int, chosen: Sequence[int]) -> list[float]:
        for attempt in range(ATTEMPTS):
            try:
                return once(world_seed, chosen)
            except (AgentError, httpx.HTTPError) as error:
                if attempt == ATTEMPTS - 1:
                    raise
                logger.warning("group on world %d failed (%s); again", world_seed, error)
                RETRIES.append(f"{condition} {world_seed}: {str(error)[:120]}")
        raise AssertionError("unreachable")

    def once(world_seed: int, chosen: Sequence[int]) -> list[float]:
        name = f"{label}-{condition}-{world_seed}-{next(counter)}"
        group = run_group(
            context,
            tape=f"l{context.run_id}-{name}",
            branch_label=name,
            world_seed=world_seed,
            mode=condition,
            dependency_model=model,
            strategies=[strategies[index] for index in chosen],
            seed_base=AGENT_SEED_BASE,
            probe=condition != "naive",
            rules=rules_for(context) if model == "rules" else (),
        )
        return [branch.outcome.reward for branch in group.branches]

    return sample


def snr_groups(
    context: RunContext, settings: Mapping[str, Any], strategies: Sequence[str], group_size: int
) -> list[dict[str, Any]]:
    """Per state: each world's sampled actions and each condition's rewards and gradient."""
    states = [np.asarray(state, dtype=float) for state in settings["states"]]
    worlds = int(settings["worlds"])
    first = int(settings["first_world"])
    samplers = {c: proxy_sampler(context, c, strategies, "snr") for c in CONDITIONS}
    jobs = []
    for s, state in enumerate(states):
        for w in range(worlds):
            uniforms = np.random.default_rng([s, w]).random(group_size)
            chosen = pg.draw_actions(state / state.sum(), uniforms).tolist()
            jobs += [(s, first + w, chosen, condition) for condition in CONDITIONS]

    def one(job: tuple[int, int, list[int], str]) -> list[float]:
        _, world_seed, chosen, condition = job
        return list(samplers[condition](world_seed, chosen))

    with ThreadPoolExecutor(max_workers=SNR_WORKERS) as pool:
        rewards = list(pool.map(one, jobs))
    out: list[dict[str, Any]] = [
        {
            "state": state.tolist(),
            "worlds": [],
            "actions": [],
            "rewards": {c: [] for c in CONDITIONS},
        }
        for state in states
    ]
    for (s, world_seed, chosen, condition), reward in zip(jobs, rewards, strict=True):
        row = out[s]
        if condition == CONDITIONS[0]:
            row["worlds"].append(world_seed)
            row["actions"].append(chosen)
        row["rewards"][condition].append(reward)
    return out


def train_all(
    context: RunContext, settings: Mapping[str, Any], strategies: Sequence[str], group_size: int
) -> dict[str, list[dict[str, Any]]]:
    """Every seed of every condition, TRAIN_WORKERS at a time; runs keep curves and rewards."""
    seeds = range(int(settings["seeds"]))

    def one(condition: str, seed: int) -> dict[str, Any]:
        return pg.train(
            proxy_sampler(context, condition, strategies, f"train{seed}"),
            actions=len(strategies),
            group_size=group_size,
            steps=int(settings["steps"]),
            learning_rate=float(settings["learning_rate"]),
            seed=seed,
            first_world=int(settings["first_world"]),
        )

    with ThreadPoolExecutor(max_workers=TRAIN_WORKERS) as pool:
        futures = {c: [pool.submit(one, c, seed) for seed in seeds] for c in CONDITIONS}
        return {c: [future.result() for future in futures[c]] for c in CONDITIONS}
