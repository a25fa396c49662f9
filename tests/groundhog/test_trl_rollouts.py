"""groundhog_rollout_func inside TRL's real GRPOTrainer: one fork per prompt's generations.

TRL (trl 1.16, pinned in .ci/trl-requirements.txt) needs torch, which lives in a venv of its
own (tests/support/trl_venv.py builds it on first use, about 40 s and 1.2 GB); the trainer runs
there (tests/groundhog/trl_grpo_step.py), so it is TRL's own `_generate` that calls
rollout_func and checks its keys, and TRL's own loss and optimizer that take the step. The
world is a real upstream behind the real proxy and resolver, started here: each group of 4
siblings reads it once per address, and a writer's read after its own write is refetched.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from groundhog.client import Groundhog
from groundhog.lifetime import tied_command
from groundhog.trl_rollouts import plan
from tests.groundhog.upstream import Upstream
from tests.support import trl_venv
from tests.support.servers import HANG_GUARD_SECONDS, REPO_ROOT, ServerProcess

GROUP = 4  # num_generations in trl_grpo_step.py


def test_repeated_and_unique_slices_plan_one_group_per_prompt() -> None:
    repeated = ["a"] * 4 + ["b"] * 4
    assert [(g, s) for _, g, s in plan(repeated, 4)] == [(0, s) for s in range(4)] + [
        (1, s) for s in range(4)
    ]
    assert plan(["a", "b"], 4) == plan(repeated, 4)  # a slice with no duplication: 4 each
    assert len(plan(["a", "b", "c"], 2)) == 6
    # The second process's slice continues the batch's numbering: a split group meets again.
    assert [(g, s) for _, g, s in plan(["b", "b"], 4, offset=2)] == [(0, 2), (0, 3)]


@pytest.fixture(scope="module")
def trl_python() -> Path:
    try:
        return trl_venv.ensure()
    except trl_venv.TrlVenvUnavailable as reason:
        if os.environ.get("CI") == "true":  # CI's machines can build it: not building is a bug
            raise
        pytest.skip(f"TRL's venv cannot be built here: {reason}")


def train_one_step(python: Path, config: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    config_path, result_path = tmp_path / "config.json", tmp_path / "result.json"
    config_path.write_text(json.dumps(config))
    # These machines set PYTHONDONTWRITEBYTECODE; the venv holds no bytecode (trl_venv), so
    # the first run writes what it imports and later runs start in a third of the CPU time.
    env = {
        **{name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"},
        "PYTHONPATH": str(REPO_ROOT),  # the worker package, on the venv's 3.11 (see trl_venv)
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "HF_HUB_OFFLINE": "1",  # nothing may come from a hub: model and tokenizer are built
        "HF_DATASETS_OFFLINE": "1",
    }
    program = str(Path(__file__).with_name("trl_grpo_step.py"))
    done = subprocess.run(
        tied_command([str(python), program, str(config_path), str(result_path)]),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=HANG_GUARD_SECONDS,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return json.loads(result_path.read_text())


@pytest.mark.slow
@pytest.mark.timeout(HANG_GUARD_SECONDS)  # the first run builds the venv
def test_grpo_trainer_takes_a_step_with_each_prompts_generations_sharing_the_world(
    trl_python: Path,
    gh_proxied: Groundhog,
    resolver: ServerProcess,
    proxy: ServerProcess,
    tape_name: str,
    http_upstream: Upstream,
    tmp_path: Path,
) -> None:
    config = {
        "resolver": resolver.url,
        "proxy": proxy.url,
        "upstream": http_upstream.url,
        "tape": tape_name,
    }
    result = train_one_step(trl_python, config, tmp_path)

    # TRL's trainer took its step, through rollout_func: the policy's weights moved.
    assert result["global_step"] == 1
    assert result["changed_parameters"] > 0
    assert any("loss" in entry for entry in result["log_history"])
    # TRL handed the slice already repeated per generation, and called rollout_func once.
    (prompts,) = result["seen_prompts"]
    assert sorted(prompts) == ["a"] * GROUP + ["b"] * GROUP
    groups = [prompts[start : start + GROUP] for start in range(0, len(prompts), GROUP)]
    assert all(len(set(group)) == 1 for group in groups)

    rollout = result["rollout"]
    assert len(rollout["completion_ids"]) == 2 * GROUP
    for number, start in enumerate(range(0, 2 * GROUP, GROUP)):
        positions = range(start, start + GROUP)
        assert [rollout["groundhog_branch"][i] for i in positions] == [
            f"root/p{number}/s{sample}" for sample in range(GROUP)
        ]
        assert len({rollout["env_reward"][i] for i in positions}) == 1  # one draw of the world
        decisions = [rollout["decisions"][i] for i in positions]
        assert sorted(first for first, _ in decisions) == ["recorded"] + ["shared"] * 3
        if prompts[start] == "a":
            assert sorted(second for _, second in decisions) == ["recorded"] + ["shared"] * 3
        else:
            writer = decisions[0]  # s0 of "b" wrote: its own write changed what it reads
            assert writer[1] == "refetched"
            assert sorted(d[1] for d in decisions[1:]) == ["recorded", "shared", "shared"]
    # Two addresses per rollout (occurrences 0 and 1): each group of 4 hit each once.
    assert http_upstream.count(f"/{tape_name}/a") == 2
    assert http_upstream.count(f"/{tape_name}/b") == 4  # 2 shared reads, 1 write, 1 refetch
    assert gh_proxied.get_tape(f"{tape_name}-train-step0").world_seed == 0

    # A rollout with no token ids is refused inside TRL's step, naming its branch.
    assert "root/p0/s0 returned no prompt_ids" in result["refused"]
