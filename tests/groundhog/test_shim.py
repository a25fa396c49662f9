"""The shim: aligned keyed draws per world, per-branch agent noise, no leaks, exact resumption."""

from __future__ import annotations

import asyncio
import datetime
import json
import random
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import pytest

from groundhog.shim import (
    ShimError,
    agent_rng,
    counters,
    current,
    install,
    installed,
    outside_branch,
    shim,
    uninstall,
)
from groundhog.shim.state import default_epoch_ns

REAL_PERF_COUNTER = time.perf_counter

PATCHED = [
    (time, "time"),
    (time, "time_ns"),
    (time, "monotonic"),
    (time, "monotonic_ns"),
    (time, "perf_counter"),
    (time, "perf_counter_ns"),
    (time, "sleep"),
    (time, "gmtime"),
    (time, "localtime"),
    (time, "ctime"),
    (asyncio, "sleep"),
    (random, "random"),
    (random, "randint"),
    (random, "choice"),
    (random, "shuffle"),
    (random, "gauss"),
    (random, "getrandbits"),
    (random, "seed"),
    (uuid, "uuid4"),
    (uuid, "uuid1"),
    (datetime, "datetime"),
    (datetime, "date"),
]


def originals() -> list[object]:
    return [getattr(owner, name) for owner, name in PATCHED] + [
        asyncio.base_events.BaseEventLoop.__dict__["time"]
    ]


def draws(count: int = 5) -> dict[str, Any]:
    """A mix of every channel, as a worker would draw them."""
    deck = list(range(10))
    random.shuffle(deck)
    return {
        "time": [time.time() for _ in range(count)],
        "time_ns": time.time_ns(),
        "monotonic": time.monotonic(),
        "perf_counter": time.perf_counter(),
        "random": [random.random() for _ in range(count)],
        "randint": [random.randint(1, 1000) for _ in range(count)],
        "choice": random.choice("abcdefgh"),
        "gauss": [random.gauss(0, 1) for _ in range(3)],
        "deck": deck,
        "bits": random.getrandbits(200),
        "uuid4": [str(uuid.uuid4()) for _ in range(count)],
        "uuid1": str(uuid.uuid1()),
        "now": datetime.datetime.now().isoformat(),
        "today": datetime.date.today().isoformat(),
    }


WORKER = """
import json, sys
sys.path.insert(0, {root!r})
from groundhog.shim import shim, agent_rng
from tests.groundhog.test_shim import draws
with shim(world_seed={seed}, branch={branch!r}):
    world = draws()
    agent = [agent_rng().random() for _ in range(5)]
print(json.dumps({{"world": world, "agent": agent}}))
"""


def run_worker(seed: int, branch: str) -> dict[str, Any]:
    from tests.support.servers import REPO_ROOT

    script = WORKER.format(root=str(REPO_ROOT), seed=seed, branch=branch)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


IDENTITIES = ("uuid4", "uuid1")


def noise(world: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in world.items() if name not in IDENTITIES}


def test_two_processes_same_seed_different_branches_share_world_not_agent() -> None:
    first = run_worker(7, "root/b0")
    second = run_worker(7, "root/b1")
    assert noise(first["world"]) == noise(second["world"])
    assert first["agent"] != second["agent"]
    # uuids are identities, not noise: siblings never share one, a replayed branch repeats its own.
    assert set(first["world"]["uuid4"]).isdisjoint(second["world"]["uuid4"])
    assert first["world"]["uuid1"] != second["world"]["uuid1"]
    assert run_worker(7, "root/b0")["world"] == first["world"]
    other_world = run_worker(8, "root/b0")
    assert other_world["world"]["random"] != first["world"]["random"]
    assert other_world["world"]["uuid4"] != first["world"]["uuid4"]


def test_same_branch_twice_gives_same_agent_stream() -> None:
    with shim(world_seed=3, branch="root/b2"):
        first = [agent_rng().random() for _ in range(4)]
    with shim(world_seed=3, branch="root/b2"):
        second = [agent_rng().random() for _ in range(4)]
    assert first == second


def test_exact_originals_restored_after_block_and_install() -> None:
    before = originals()
    with shim(world_seed=1, branch="root"):
        assert installed()
        assert time.time is not before[0]
        with shim(world_seed=2, branch="root/b0"):
            pass
        assert time.time is not before[0], "inner exit must not uninstall for the outer block"
    assert not installed()
    assert originals() == before
    assert all(a is b for a, b in zip(originals(), before, strict=True))
    install(world_seed=1, branch="root")
    uninstall()
    assert all(a is b for a, b in zip(originals(), before, strict=True))


def test_originals_restored_when_block_raises() -> None:
    before = originals()
    with pytest.raises(KeyError), shim(world_seed=1, branch="root"):
        raise KeyError("boom")
    assert all(a is b for a, b in zip(originals(), before, strict=True))
    assert current() is None


def test_code_outside_branch_context_sees_real_functions() -> None:
    outside: dict[str, Any] = {}
    inside_ready = threading.Event()
    outside_done = threading.Event()

    def other_thread() -> None:
        inside_ready.wait(10)
        outside["time"] = time.time()
        outside["state"] = current()
        outside["year"] = datetime.datetime.now().year
        outside_done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with shim(world_seed=5, branch="root", epoch=0.0):
        inside_time = time.time()
        inside_ready.set()
        outside_done.wait(10)
    thread.join(10)
    assert inside_time < 10.0, "epoch=0 puts the virtual clock at the Unix epoch"
    assert outside["state"] is None
    assert outside["time"] > 1_600_000_000, "a thread outside the branch reads the real clock"
    assert outside["year"] >= 2024


def test_threads_each_draw_their_own_aligned_sequence() -> None:
    with shim(world_seed=11, branch="root/b0"):
        reference = [random.random() for _ in range(20)]
    barrier = threading.Barrier(4)
    results: dict[int, list[float]] = {}

    def branch(index: int) -> None:
        with shim(world_seed=11, branch=f"root/b{index}"):
            values = []
            for _ in range(20):
                barrier.wait(10)  # draws interleave across threads
                values.append(random.random())
            results[index] = values

    threads = [threading.Thread(target=branch, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {index: reference for index in range(4)}


def test_asyncio_gather_branches_are_isolated_and_aligned() -> None:
    async def rollout(index: int) -> tuple[list[float], list[str], float]:
        with shim(world_seed=21, branch=f"root/b{index}"):
            values, ids = [], []
            start = time.time()
            for step in range(5):
                values.append(random.random())
                await asyncio.sleep(index * 0.5 + step)  # different interleavings per task
                ids.append(str(uuid.uuid4()))
            return values, ids, time.time() - start

    async def group() -> list[tuple[list[float], list[str], float]]:
        return await asyncio.gather(*(rollout(index) for index in range(3)))

    results = asyncio.run(group())
    assert results[0][0] == results[1][0] == results[2][0]
    assert len({uid for result in results for uid in result[1]}) == 15  # identities: unique
    elapsed = [round(result[2], 2) for result in results]
    assert elapsed[1] - elapsed[0] == pytest.approx(2.5, abs=0.05), "each task owns its clock"
    assert current() is None


def test_asyncio_sleep_returns_at_once_but_yields_to_the_loop() -> None:
    order: list[str] = []

    async def sleeper() -> None:
        with shim(world_seed=1, branch="root"):
            await asyncio.sleep(3600)
            order.append("sleeper")

    async def other() -> None:
        order.append("other")

    async def main() -> float:
        start = REAL_PERF_COUNTER()
        await asyncio.gather(sleeper(), other())
        return REAL_PERF_COUNTER() - start

    real_elapsed = asyncio.run(main())
    assert order == ["other", "sleeper"]
    assert real_elapsed < 30, "an hour of virtual sleep must not be slept"


def test_asyncio_timeouts_still_fire_inside_a_branch() -> None:
    async def main() -> None:
        with shim(world_seed=1, branch="root"), pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=0.05)

    asyncio.run(main())


def test_sleep_advances_virtual_clock_without_waiting() -> None:
    start_real = REAL_PERF_COUNTER()
    with shim(world_seed=4, branch="root", tick=0.001):
        before = time.time()
        time.sleep(86_400)
        after = time.time()
        with pytest.raises(ValueError):
            time.sleep(-1)
    assert after - before == pytest.approx(86_400.001, abs=1e-3)
    assert REAL_PERF_COUNTER() - start_real < 30


def test_polling_loop_ends_because_each_read_ticks() -> None:
    with shim(world_seed=4, branch="root", tick=0.001):
        deadline = time.monotonic() + 2.0
        polls = 0
        while time.monotonic() < deadline:
            polls += 1
    assert 1_990 <= polls <= 2_000


def test_clock_functions_agree_with_the_world_epoch() -> None:
    with shim(world_seed=9, branch="root", tick=0.0):
        now_ns = time.time_ns()
        assert now_ns == default_epoch_ns(9)
        moment = datetime.datetime.now(datetime.UTC)
        assert moment.timestamp() == pytest.approx(now_ns / 1e9)
        assert datetime.datetime.utcnow() == moment.replace(tzinfo=None)
        assert datetime.date.today() == datetime.datetime.now().date()
        assert time.gmtime() == time.gmtime(now_ns // 10**9)
        assert type(moment) is type(datetime.datetime(2020, 1, 1))
        assert isinstance(moment, datetime.datetime)
        assert isinstance(moment, datetime.date)
        stamp = uuid.uuid1()
        assert stamp.version == 1
        assert (stamp.time - 0x01B21DD213814000) * 100 == now_ns


def test_datetime_values_stay_real_and_usable_while_installed() -> None:
    made_before = datetime.datetime(2024, 5, 1, 12, 0)
    with shim(world_seed=9, branch="root"):
        assert isinstance(made_before, datetime.datetime)
        made_inside = datetime.datetime(2024, 5, 1, 13, 0)
        assert made_inside - made_before == datetime.timedelta(hours=1)
        parsed = datetime.datetime.fromisoformat("2024-05-01T12:00:00")
        assert parsed == made_before
        assert issubclass(type(parsed), datetime.datetime)


def test_resumed_counters_continue_the_exact_sequence() -> None:
    with shim(world_seed=13, branch="root") as parent:
        draws(3)
        random.seed("agent-config")  # a re-keyed stream must resume too
        random.gauss(0, 1)  # leaves gauss_next cached
        agent_rng().random()
        snapshot = json.loads(json.dumps(counters()))
        expected_world = draws(4)
    expected_agent_after = None
    with shim(world_seed=13, branch="root/b0", counters=snapshot):
        resumed_world = draws(4)
        expected_agent_after = agent_rng().random()
    assert noise(resumed_world) == noise(expected_world)
    assert resumed_world["uuid4"] != expected_world["uuid4"]  # the child's own identities
    assert parent.counters()["occurrences"] != snapshot["occurrences"]
    with shim(world_seed=13, branch="root/b1", counters=snapshot):
        draws(4)
        assert agent_rng().random() != expected_agent_after, "agent noise stays per branch"


def test_counters_from_another_world_are_refused() -> None:
    with shim(world_seed=1, branch="root"):
        snapshot = counters()
    with pytest.raises(ShimError, match="world 1, not world 2"):
        shim(world_seed=2, branch="root", counters=snapshot)
    with pytest.raises(ShimError, match="version"):
        shim(world_seed=1, branch="root", counters={"version": 99})


def test_configuration_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDHOG_WORLD_SEED", "42")
    monkeypatch.setenv("GROUNDHOG_BRANCH", "root/b3")
    with shim() as active:
        assert (active.world_seed, active.branch) == (42, "root/b3")
    monkeypatch.setenv("GROUNDHOG_WORLD_SEED", "forty-two")
    with pytest.raises(ShimError, match="not an integer"):
        shim()
    monkeypatch.delenv("GROUNDHOG_WORLD_SEED")
    with pytest.raises(ShimError, match="GROUNDHOG_WORLD_SEED"):
        shim()


def test_agent_rng_and_counters_need_a_branch() -> None:
    with pytest.raises(ShimError, match="not inside a branch"):
        agent_rng()
    with pytest.raises(ShimError, match="not inside a branch"):
        counters()


def test_install_makes_the_process_one_branch_until_uninstall(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with shim(world_seed=6, branch="root/b1", counters=None):
        random.random()
        snapshot = counters()
        expected = random.random()
    monkeypatch.setenv("GROUNDHOG_SHIM_COUNTERS", json.dumps(snapshot))
    before = originals()
    install(world_seed=6, branch="root/b1")
    try:
        seen: list[float] = []
        thread = threading.Thread(target=lambda: seen.append(random.random()))
        thread.start()
        thread.join(10)
        assert seen == [expected], "a new thread shares the process branch, resumed from env"
        with pytest.raises(ShimError, match="already installed"):
            install(world_seed=6)
    finally:
        uninstall()
    assert all(a is b for a, b in zip(originals(), before, strict=True))
    with pytest.raises(ShimError, match="not installed"):
        uninstall()


def test_outside_branch_sees_the_real_world_and_leaves_counters_alone() -> None:
    with shim(world_seed=2, branch="root", epoch=0.0) as block:
        before = block.counters()
        with outside_branch():
            assert current() is None
            assert time.time() > 1_600_000_000
            random.random()
        assert block.counters() == before
        assert time.time() < 10.0, "back inside the branch after the block"


def test_uuids_are_keyed_by_tape_branch_and_call_index() -> None:
    def ids(tape: str, branch: str) -> tuple[list[uuid.UUID], float]:
        with shim(world_seed=5, branch=branch, tape=tape):
            return [uuid.uuid4() for _ in range(3)], random.random()

    first, noise_first = ids("run-1", "root/b0")
    assert ids("run-1", "root/b0") == (first, noise_first)  # a replayed branch: the same ids
    sibling, noise_sibling = ids("run-1", "root/b1")
    other_tape, noise_other = ids("run-2", "root/b0")
    assert len({*first, *sibling, *other_tape}) == 9
    assert noise_first == noise_sibling == noise_other  # noise stays common to the world
