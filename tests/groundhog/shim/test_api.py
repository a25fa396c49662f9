"""Unit tests of groundhog/shim/api.py: shim blocks, install/uninstall, counters and RNGs."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator

import pytest

from groundhog.shim import api, context, patches
from groundhog.shim.state import ShimError


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("GROUNDHOG_WORLD_SEED", "GROUNDHOG_BRANCH", "GROUNDHOG_SHIM_COUNTERS"):
        monkeypatch.delenv(name, raising=False)
    assert not patches.installed(), "another test left the shim installed"
    saved = context.process_default()
    context.set_process_default(None)
    yield
    context.set_process_default(None)
    while patches.installed():
        patches.release()
    context.set_process_default(saved)


def test_a_block_installs_and_removes_the_patches(clean: None) -> None:
    original = time.time
    with api.shim(world_seed=3, branch="root/a", tick=0.5, epoch=1000.0) as block:
        assert patches.installed() and api.current() is block.state
        assert (block.world_seed, block.branch) == (3, "root/a")
        assert time.time() == 1000.5
        assert time.time() == 1001.0
    assert not patches.installed() and time.time is original
    assert api.current() is None


def test_siblings_draw_the_same_world_values_but_different_agent_values(clean: None) -> None:
    with api.shim(world_seed=9, branch="root/a"):
        a_world = [random.random() for _ in range(3)]
        a_agent = api.agent_rng().random()
    with api.shim(world_seed=9, branch="root/b"):
        b_world = [random.random() for _ in range(3)]
        b_agent = api.agent_rng().random()
        assert api.world_rng().random() != b_world[0]  # the stream moved on
    assert a_world == b_world
    assert a_agent != b_agent


def test_counters_resume_exactly_where_the_parent_stood(clean: None) -> None:
    with api.shim(world_seed=4) as parent:
        random.random()
        time.time()
        saved = api.counters()
        expected = [random.random(), time.time()]
    assert saved["world_seed"] == 4 and saved["branch"] == parent.branch == "root"
    assert saved["occurrences"] == {"random.random": 1}
    assert json.loads(json.dumps(saved)) == saved
    with api.shim(world_seed=4, counters=saved):
        assert [random.random(), time.time()] == expected
    with pytest.raises(ShimError, match="world 4, not world 5"):
        api.shim(world_seed=5, counters=saved)


def test_a_block_cannot_be_entered_twice(clean: None) -> None:
    block = api.shim(world_seed=1)
    with block, pytest.raises(ShimError, match="already active"):
        block.__enter__()
    assert not patches.installed()


def test_async_block(clean: None) -> None:
    async def run() -> str:
        async with api.shim(world_seed=1, branch="root/z"):
            state = api.current()
            return state.branch if state else ""

    assert asyncio.run(run()) == "root/z"
    assert not patches.installed()


def test_seed_and_branch_come_from_the_environment(
    clean: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ShimError, match="GROUNDHOG_WORLD_SEED"):
        api.shim()
    monkeypatch.setenv("GROUNDHOG_WORLD_SEED", "nope")
    with pytest.raises(ShimError, match="not an integer"):
        api.shim()
    monkeypatch.setenv("GROUNDHOG_WORLD_SEED", "12")
    monkeypatch.setenv("GROUNDHOG_BRANCH", "root/env")
    block = api.shim()
    assert (block.world_seed, block.branch) == (12, "root/env")
    with pytest.raises(ShimError, match="must be an integer"):
        api.shim(world_seed=True)  # type: ignore[arg-type]


def test_install_makes_the_process_one_branch(clean: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with api.shim(world_seed=2, branch="root/p"):
        random.random()
        saved = api.counters()
        expected = random.random()
    monkeypatch.setenv("GROUNDHOG_SHIM_COUNTERS", json.dumps(saved))
    state = api.install(world_seed=2, branch="root/p")
    try:
        assert api.current() is state and patches.installed()
        assert random.random() == expected
        with pytest.raises(ShimError, match="already installed"):
            api.install(world_seed=2)
    finally:
        api.uninstall()
    assert not patches.installed() and api.current() is None
    with pytest.raises(ShimError, match="not installed"):
        api.uninstall()


def test_install_rejects_malformed_counters_json(
    clean: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDHOG_SHIM_COUNTERS", "{oops")
    with pytest.raises(ShimError, match="GROUNDHOG_SHIM_COUNTERS is not valid JSON"):
        api.install(world_seed=1)
    assert not patches.installed()


def test_rngs_and_counters_need_a_branch(clean: None) -> None:
    for call in (api.counters, api.agent_rng, api.world_rng):
        with pytest.raises(ShimError, match="not inside a branch"):
            call()
