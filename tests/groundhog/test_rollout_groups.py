"""Branches named by a framework's (group, sample): deterministic, idempotent, node-independent."""

from __future__ import annotations

import asyncio
import random
import threading
import uuid

import pytest

from groundhog.client import Groundhog
from groundhog.rollout_groups import RolloutGroups, branch_name, rollout_path
from tests.groundhog.upstream import Upstream
from tests.support.servers import ServerProcess


def test_identifiers_become_branch_names() -> None:
    assert branch_name("prompt-42") == "prompt-42"
    assert branch_name(7) == "7"
    odd = branch_name("What is 2+2? / ünïcode")
    assert odd.startswith("What-is-2-2-") and odd == branch_name("What is 2+2? / ünïcode")
    assert branch_name("a b") != branch_name("a/b"), "distinct ids never share a branch"
    assert branch_name("x" * 100) != branch_name("x" * 101)
    assert rollout_path("g", 3) == "root/g/s3"
    with pytest.raises(ValueError):
        rollout_path("g", -1)


def test_nodes_that_never_talk_create_one_group(
    resolver: ServerProcess, isolated_env: object, tape_name: str
) -> None:
    """veRL spreads one group over nodes: each creates what it needs; nothing is forked twice."""
    with Groundhog(resolver.url, proxy_url="http://127.0.0.1:9") as setup:
        setup.open(tape_name, world_seed=4)
    paths: list[str] = []
    errors: list[BaseException] = []

    def node(sample: int) -> None:
        try:
            with Groundhog(resolver.url, proxy_url="http://127.0.0.1:9") as own_client:
                groups = RolloutGroups(own_client.tape(tape_name))
                paths.append(groups.branch("uid-9", sample).path)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=node, args=(sample % 4,)) for sample in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(set(paths)) == [f"root/uid-9/s{sample}" for sample in range(4)]
    with Groundhog(resolver.url, proxy_url="http://127.0.0.1:9") as check:
        listed = [branch.path for branch in check.list_branches(tape_name)]
    assert sorted(listed) == ["root", "root/uid-9", *(f"root/uid-9/s{i}" for i in range(4))]


def test_rollouts_in_one_process_draw_aligned_noise_and_store_their_counters(
    gh: Groundhog, tape_name: str
) -> None:
    groups = RolloutGroups(gh.open(tape_name, world_seed=11))

    async def one(sample: int) -> tuple[float, str]:
        async with groups.rollout("g", sample) as branch:
            await asyncio.sleep(0)  # interleave the group's tasks
            return random.random(), branch.path

    drawn = asyncio.run(_gather(one, 3))
    assert len({value for value, _ in drawn}) == 1, "siblings draw the same world noise"
    stored = gh.get_branch(tape_name, "root/g/s1").shim_counters
    assert stored["occurrences"], "the rollout's counters were stored at its end"


async def _gather(one, count: int):  # type: ignore[no-untyped-def]
    return await asyncio.gather(*(one(sample) for sample in range(count)))


def test_the_shared_client_refuses_a_request_outside_any_rollout(
    gh_proxied: Groundhog, http_upstream: Upstream
) -> None:
    groups = RolloutGroups(gh_proxied.open(f"outside-{uuid.uuid4().hex[:8]}", world_seed=1))

    async def stray() -> None:
        async with groups.async_client() as tools:
            await tools.get(http_upstream.url)

    with pytest.raises(RuntimeError, match="outside any rollout"):
        asyncio.run(stray())
