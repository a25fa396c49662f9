"""A `rollout_func` for TRL's `GRPOTrainer` (trl 1.16): each prompt's generations are one group.

TRL 1.16 calls `rollout_func(prompts, trainer)` once per generation batch, from the trainer's
thread, with the prompts of this process, and checks that the dict it returns has
`prompt_ids`, `completion_ids` and `logprobs` (one list per completion); every other key is
forwarded to the reward functions. The trainer computes the advantage over runs of
`num_generations` consecutive completions, so the completions of one prompt must be siblings of
one fork for the world's noise to cancel in it. Without this module a trainer would either
share nothing (every completion its own world) or hand-roll the branch bookkeeping per step.

    rollout_func = groundhog_rollout_func(gh, "run-7", rollout)
    trainer = GRPOTrainer(model=..., reward_funcs=[env_reward], rollout_func=rollout_func, ...)

`rollout(prompt, trainer, tools)` is the user's episode: it generates with the policy (e.g.
`trainer.vllm_generation`, or the user's inference server: not through Groundhog), calls the
world through `tools` (an httpx client naming the rollout's branch), and returns that one
completion's `prompt_ids`, `completion_ids`, `logprobs` and any reward fields.

TRL's sampler (`RepeatSampler`, `mini_repeat_count=num_generations`) hands each process its
prompts already repeated `num_generations` times in a row (seen in trl 1.16.0's real trainer,
tests/groundhog/test_trl_rollouts.py); its docstring says the slice has no duplication. Both
are handled: a slice whose runs of `num_generations` positions hold equal
prompts gets one rollout per entry, any other slice `num_generations` rollouts per prompt.
Groups are numbered by the position in the whole batch (the process index times the slice
length), so a group split over processes lands on one fork; each (mode, global step) opens its
own tape, one draw of the world, the same name in every process.

TRL itself is imported nowhere here: it needs torch, and the worker install must not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx

from groundhog.client import Groundhog
from groundhog.errors import GroundhogError
from groundhog.rollout_groups import RolloutGroups

REQUIRED_KEYS = ("prompt_ids", "completion_ids", "logprobs")
BRANCH_FIELD = "groundhog_branch"

Rollout = Callable[[Any, Any, httpx.AsyncClient], Awaitable[Mapping[str, Any]]]


class RolloutOutputError(GroundhogError, ValueError):
    """A rollout returned something TRL's trainer would refuse (a missing key)."""

    def __init__(self, detail: str) -> None:
        super().__init__(None, "Rollout output TRL would refuse", detail)


def _mode(trainer: Any) -> str:
    model = getattr(trainer, "model", None)
    return "train" if getattr(model, "training", True) else "eval"


def _generations(trainer: Any, mode: str) -> int:
    if mode == "eval":
        return int(getattr(trainer, "num_generations_eval", None) or trainer.num_generations)
    return int(trainer.num_generations)


def _is_repeated(prompts: Sequence[Any], size: int, offset: int) -> bool:
    """Whether the slice is in TRL's RepeatSampler order: entries whose batch positions fall in
    one run of `size` are the same prompt (a slice of one prompt per group is not)."""
    first_of_group: dict[int, Any] = {}
    for index, prompt in enumerate(prompts):
        group = (offset + index) // size
        if first_of_group.setdefault(group, prompt) != prompt:
            return False
    return True


def plan(prompts: Sequence[Any], size: int, offset: int = 0) -> list[tuple[Any, int, int]]:
    """(prompt, group number, sample) per completion to return, in TRL's order."""
    if size < 1:
        raise ValueError(f"num_generations must be at least 1, got {size}")
    if _is_repeated(prompts, size, offset):
        return [
            (prompt, (offset + index) // size, (offset + index) % size)
            for index, prompt in enumerate(prompts)
        ]
    return [
        (prompt, offset + index, sample)
        for index, prompt in enumerate(prompts)
        for sample in range(size)
    ]


def _collect(outputs: Sequence[Mapping[str, Any]], branches: list[str]) -> dict[str, list[Any]]:
    keys = list(dict.fromkeys(key for output in outputs for key in output))
    for index, output in enumerate(outputs):
        missing = [key for key in REQUIRED_KEYS if key not in output]
        if missing:
            raise RolloutOutputError(
                f"the rollout on branch {branches[index]} returned no {', '.join(missing)}: TRL's "
                f"GRPOTrainer needs {', '.join(REQUIRED_KEYS)} for every completion"
            )
    collected: dict[str, list[Any]] = {key: [output.get(key) for output in outputs] for key in keys}
    collected[BRANCH_FIELD] = list(branches)
    return collected


def groundhog_rollout_func(
    gh: Groundhog, run: str, rollout: Rollout, *, parent: str = "root"
) -> Callable[[list[Any], Any], dict[str, list[Any]]]:
    """`rollout_func` for `GRPOTrainer(rollout_func=...)`: one fork per prompt's generations."""

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        mode = _mode(trainer)
        size = _generations(trainer, mode)
        step = int(trainer.state.global_step)
        accelerator = getattr(trainer, "accelerator", None)
        offset = int(getattr(accelerator, "process_index", 0)) * len(prompts)
        groups = RolloutGroups(gh.open(f"{run}-{mode}-step{step}", world_seed=step), parent=parent)
        work = plan(prompts, size, offset)

        async def run_all() -> list[Mapping[str, Any]]:
            async with groups.async_client() as tools:

                async def one(prompt: Any, group: int, sample: int) -> Mapping[str, Any]:
                    async with groups.rollout(f"p{group}", sample):
                        return await rollout(prompt, trainer, tools)

                return list(await asyncio.gather(*(one(*item) for item in work)))

        outputs = asyncio.run(run_all())
        paths = [f"{parent}/p{group}/s{sample}" for _, group, sample in work]
        return _collect(outputs, paths)

    return rollout_func
