"""examples/train_grpo.py trains through real resolver, proxy and worldsim processes."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from groundhog.lifetime import tied_command
from tests.examples.conftest import Stack
from tests.support.servers import HANG_GUARD_SECONDS, REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "train_grpo.py"


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_grpo_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env = {k: v for k, v in env.items() if not k.startswith("GROUNDHOG_")}
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(REPO_ROOT)}


def test_policy_update_moves_mass_toward_positive_advantage() -> None:
    policy = _load_example().Policy(4)
    policy.update([2, 0], [1.0, -1.0], learning_rate=1.0)
    probabilities = policy.probabilities()
    assert math.isclose(sum(probabilities), 1.0)
    assert probabilities[2] > 0.25 > probabilities[0]
    assert math.isclose(probabilities[1], probabilities[3])


@pytest.mark.timeout(HANG_GUARD_SECONDS)
def test_training_loop_runs_groups_through_groundhog(stack: Stack, tmp_path: Path) -> None:
    run = f"grpo-{uuid.uuid4().hex[:8]}"
    command = [
        sys.executable,
        str(EXAMPLE),
        "--resolver-url", stack.resolver.url,
        "--proxy-url", stack.proxy.url,
        "--world-url", stack.world.url,
        "--iterations", "2",
        "--group-size", "3",
        "--run", run,
    ]  # fmt: skip
    # No wall-clock budget (a loaded machine is slow, not wrong); tied so it dies with the run.
    done = subprocess.run(
        tied_command(command), capture_output=True, text=True, env=_clean_env(tmp_path)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "HTTP Request:" not in done.stderr, "httpx's per-request INFO lines flood stderr"
    summary = json.loads(done.stdout)
    assert summary["run"] == run and len(summary["iterations"]) == 2
    module = _load_example()
    policy = module.Policy(len(module.STRATEGIES))
    for iteration in summary["iterations"]:
        assert len(iteration["branches"]) == 3
        assert all(path.startswith(f"root/{run}-it") for path in iteration["branches"])
        assert all(math.isfinite(reward) for reward in iteration["rewards"])
        assert math.isclose(sum(iteration["advantages"]), 0.0, abs_tol=1e-9)
        mean = sum(iteration["rewards"]) / 3
        assert iteration["advantages"] == pytest.approx([r - mean for r in iteration["rewards"]])
        # Siblings share the world's reads: every group's first read of the world is recorded
        # once and served to the other branches from the tape.
        assert iteration["decisions"].get("shared", 0) >= 2
        assert 0 < iteration["reads_shared"] < iteration["reads"]
        actions = [module.STRATEGIES.index(name) for name in iteration["strategies"]]
        policy.update(actions, iteration["advantages"], 2.0)
        expected = dict(zip(map(str, module.STRATEGIES), policy.probabilities(), strict=True))
        assert iteration["policy"] == pytest.approx(expected)
    # Whichever sibling recorded first, another was served its bytes from the tape (how many
    # depends on which sibling's write lands before its read: concurrent, in no fixed order).
    decisions = [
        {
            event["decision"]
            for event in httpx.get(
                f"{stack.resolver.url}/v1/tapes/{run}-it0/events",
                params={"branch": branch},
                trust_env=False,
            ).json()["events"]
        }
        for branch in summary["iterations"][0]["branches"]
    ]
    assert sum("shared" in seen for seen in decisions) >= 1, decisions
