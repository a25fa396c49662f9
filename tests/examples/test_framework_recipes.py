"""examples/framework_recipes.py, each pattern driven through real resolver, proxy and worldsim
processes."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from groundhog.client import Groundhog
from groundhog.rollout_groups import RolloutGroups
from tests.examples.conftest import Stack
from tests.support.servers import REPO_ROOT

RECIPES = REPO_ROOT / "examples" / "framework_recipes.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("framework_recipes", RECIPES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


recipes = _load()


@pytest.fixture
def gh(stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Groundhog]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with Groundhog(stack.resolver.url, proxy_url=stack.proxy.url) as client:
        yield client


@pytest.fixture
def groups(gh: Groundhog) -> RolloutGroups:
    return RolloutGroups(gh.open(f"recipes-{uuid.uuid4().hex[:8]}", world_seed=5))


def decisions(gh: Groundhog, tape: str, branch: str) -> list[str]:
    return [event.decision for event in gh.iter_events(tape, branch=branch)]


def group_shares_one_recording(gh: Groundhog, tape: str, paths: list[str]) -> None:
    """Whichever sibling asked first recorded; every other one was served the tape's bytes."""
    seen = sorted(decision for path in paths for decision in decisions(gh, tape, path))
    assert seen == ["recorded"] + ["shared"] * (len(paths) - 1), seen


def run_with_tools(groups: RolloutGroups, body):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        async with groups.async_client() as tools:
            return await body(tools)

    return asyncio.run(main())


def test_sandboxes_get_per_rollout_proxy_credentials(
    stack: Stack, gh: Groundhog, groups: RolloutGroups
) -> None:
    seen = asyncio.run(recipes.sandbox_group(groups, stack.world.url, "ex-1", 3))
    assert sorted(seen) == ["recorded", "shared", "shared"], seen


def test_a_group_spread_over_nodes_shares_one_recording(stack: Stack, gh: Groundhog) -> None:
    tape = gh.open(f"nodes-{uuid.uuid4().hex[:8]}", world_seed=5)
    assert recipes.repeated_identifiers(5, 4) == ("prompt1", 1)
    assert recipes.repeated_identifiers(5, 4, uid="u-7") == ("u-7", 1)

    def node(samples: range) -> list[float]:
        """One node: its own client and RolloutGroups, told only the sample index and n."""
        with Groundhog(stack.resolver.url, proxy_url=stack.proxy.url) as own:
            groups = RolloutGroups(own.tape(tape.name))
            return run_with_tools(
                groups,
                lambda tools: asyncio.gather(
                    *(
                        recipes.rollout_by_index(
                            groups, tools, stack.world.url,
                            prompt="battery", sample_index=index, n=4, uid="u-7",
                        )
                        for index in samples
                    )
                ),
            )  # fmt: skip

    rewards = node(range(0, 2)) + node(range(2, 4))
    assert len(set(rewards)) == 1
    group_shares_one_recording(gh, tape.name, [f"root/u-7/s{i}" for i in range(4)])


def test_repeated_tasks(stack: Stack, gh: Groundhog, groups: RolloutGroups) -> None:
    by_task = run_with_tools(
        groups,
        lambda tools: recipes.collect_repeats(groups, tools, stack.world.url, ["hydrogen"], 3),
    )
    assert len(by_task["hydrogen"]) == 3 and len(set(by_task["hydrogen"])) == 1
    group_shares_one_recording(gh, groups.tape.name, [f"root/task-hydrogen/s{i}" for i in range(3)])


def test_the_script_prints_a_json_summary_of_every_recipe(stack: Stack, tmp_path: Path) -> None:
    """examples/README.md: each script prints a JSON summary; rollouts of a group agree."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env = {k: v for k, v in env.items() if not k.startswith("GROUNDHOG_")}
    env.update({"XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(REPO_ROOT)})
    command = [
        sys.executable, str(RECIPES), "--resolver-url", stack.resolver.url,
        "--proxy-url", stack.proxy.url, "--world-url", stack.world.url, "--rollouts", "2",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    rewards = summary["rewards"]
    assert summary["tape"].startswith("recipes-")
    for recipe in ("by_index", "repeats"):
        assert len(rewards[recipe]) == 2 and len(set(rewards[recipe])) == 1, (recipe, rewards)
    assert rewards["sandbox_decisions"] == ["recorded", "shared"]


def test_the_system_python_is_told_to_use_the_venv() -> None:
    """Run by an interpreter without the project (no httpx, no groundhog): the fix, no traceback."""
    done = subprocess.run(
        [sys.executable, "-S", "-I", str(RECIPES), "--help"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "run it as .venv/bin/python examples/framework_recipes.py" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
