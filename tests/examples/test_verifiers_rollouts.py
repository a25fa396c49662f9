"""examples/verifiers_rollouts.py: each rollout of a prompt is a sibling sharing the search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.examples.conftest import Stack
from tests.support.servers import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "verifiers_rollouts.py"


def test_rollouts_of_one_prompt_share_one_recording(stack: Stack, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env = {k: v for k, v in env.items() if not k.startswith("GROUNDHOG_")}
    env.update({"XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(REPO_ROOT)})
    command = [
        sys.executable, str(EXAMPLE),
        "--resolver-url", stack.resolver.url,
        "--proxy-url", stack.proxy.url,
        "--world-url", stack.world.url,
        "--prompts", "solar", "wind",
        "--rollouts-per-example", "3",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    rollouts = json.loads(done.stdout)["rollouts"]
    assert len(rollouts) == 6 and len({row["branch"] for row in rollouts}) == 6
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rollouts:
        groups[row["branch"].rsplit("/", 1)[0]].append(row)
    assert len(groups) == 2
    for members in groups.values():
        assert len({json.dumps(row["hits"]) for row in members}) == 1
        # Same search, same reward; and the toy task is solvable (the reward is not all zero).
        assert len({row["reward"] for row in members}) == 1 and members[0]["reward"] > 0
        assert sorted(row["decision"] for row in members) == ["recorded", "shared", "shared"]
