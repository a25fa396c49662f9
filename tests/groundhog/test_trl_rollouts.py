"""groundhog_rollout_func: one fork per prompt's generations, through the real stack.

TRL itself is not imported: it needs torch, which does not fit CI (docs/recipes.md). The trainer
here carries only the attributes `rollout_func` reads (`num_generations`, `state.global_step`,
`accelerator.process_index`, `model.training`); what TRL then checks — the three token keys —
is checked by `RolloutOutputError` before TRL would see it. The world is a real upstream behind
the real proxy and resolver: a group of 4 reads it once, and a writer's read after its own
write is refetched.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from groundhog.client import Groundhog
from groundhog.trl_rollouts import RolloutOutputError, groundhog_rollout_func, plan
from tests.groundhog.upstream import Upstream


def trainer(num_generations: int = 4, step: int = 0, process: int = 0) -> Any:
    return SimpleNamespace(
        num_generations=num_generations,
        num_generations_eval=None,
        state=SimpleNamespace(global_step=step),
        accelerator=SimpleNamespace(process_index=process),
        model=SimpleNamespace(training=True),
    )


def test_repeated_and_unique_slices_plan_one_group_per_prompt() -> None:
    repeated = ["a"] * 4 + ["b"] * 4
    assert [(g, s) for _, g, s in plan(repeated, 4)] == [(0, s) for s in range(4)] + [
        (1, s) for s in range(4)
    ]
    assert plan(["a", "b"], 4) == plan(repeated, 4)  # a slice with no duplication: 4 each
    assert len(plan(["a", "b", "c"], 2)) == 6
    # The second process's slice continues the batch's numbering: a split group meets again.
    assert [(g, s) for _, g, s in plan(["b", "b"], 4, offset=2)] == [(0, 2), (0, 3)]


def test_each_prompts_generations_share_the_world_and_a_writer_is_refetched(
    gh_proxied: Groundhog, tape_name: str, http_upstream: Upstream
) -> None:
    async def rollout(prompt: str, _trainer: Any, tools: httpx.AsyncClient) -> dict[str, Any]:
        url = f"{http_upstream.url}/{tape_name}/{prompt}"
        first = await tools.get(url)
        branch = first.request.headers["X-Groundhog-Branch"]
        if prompt == "b" and branch.endswith("/s0"):
            await tools.post(url, content=b"changed")
        second = await tools.get(url)
        return {
            "prompt_ids": [1, 2],
            "completion_ids": [3],
            "logprobs": [-0.5],
            "env_reward": [first.json()["serial"]],
            "decisions": [first.headers["X-Groundhog-Decision"],
                          second.headers["X-Groundhog-Decision"]],
        }  # fmt: skip

    rollout_func = groundhog_rollout_func(gh_proxied, tape_name, rollout)
    output = rollout_func(["a"] * 4 + ["b"] * 4, trainer(step=3))

    assert {"prompt_ids", "completion_ids", "logprobs", "env_reward"} <= output.keys()
    assert len(output["completion_ids"]) == 8
    branches = output["groundhog_branch"]
    assert branches[:4] == [f"root/p0/s{s}" for s in range(4)]
    assert branches[4:] == [f"root/p1/s{s}" for s in range(4)]
    for group in (slice(0, 4), slice(4, 8)):
        assert len({reward[0] for reward in output["env_reward"][group]}) == 1  # one draw
    # Two reads per rollout, two addresses (occurrences 0 and 1): the group of 4 hit each once.
    assert http_upstream.count(f"/{tape_name}/a") == 2
    assert sorted(d[0] for d in output["decisions"][:4]) == ["recorded"] + ["shared"] * 3
    writer = output["decisions"][4]
    assert writer[1] == "refetched"  # its own write changed what it reads
    # The other three read occurrence 1 unchanged: one of them recorded it, two shared it.
    assert sorted(d[1] for d in output["decisions"][5:]) == ["recorded", "shared", "shared"]
    assert http_upstream.count(f"/{tape_name}/b") == 4  # 2 shared reads, 1 write, 1 refetch
    assert gh_proxied.get_tape(f"{tape_name}-train-step3").world_seed == 3


def test_a_rollout_without_token_ids_is_refused_naming_its_branch(
    gh_proxied: Groundhog, tape_name: str
) -> None:
    async def rollout(prompt: str, _trainer: Any, tools: httpx.AsyncClient) -> dict[str, Any]:
        return {"env_reward": 1.0}

    rollout_func = groundhog_rollout_func(gh_proxied, tape_name, rollout)
    with pytest.raises(RolloutOutputError, match=r"root/p0/s0 returned no prompt_ids"):
        rollout_func(["a"], trainer(num_generations=1))
