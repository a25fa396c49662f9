"""`python -m bench.mcp_live_check`: the MCP reference live, alone and beside load, re-rendered.

Issue 58 item 3 asked whether the in-run MCP reference is lower because of the run's
conditions (transport, sessions, the world under load). The desk's reward is a pure function
of the day, the agent's seed and the world's call numbers its per-call draws come from
(worldsim/mcp_state.py's `draws`). This drives reference rollouts with the official MCP client
straight at a fresh `python -m worldsim --world mcp`, as `collect.collect_reference` does,
reads each session's call numbers from `/_draws` before dropping it, and re-renders the
rollout in process from them: a reward that differs would name something the transport or
the session handling changed. It runs the same days twice, alone and with load threads
driving other sessions through the same world, and reports the retries (HTTP answers per tool
call), reported latency, exact re-renders and the contrasts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from bench.groups import agent_seed
from bench.stats import Estimate, difference, mean_estimate
from worldsim import mcp_agent, mcp_client, mcp_state

logger = logging.getLogger(__name__)

ACTIONS = ("first", "compare", "upgrade")  # bench/config.py WORLDS["mcp"]: seeds by index
AGENT_BASE = 7
LOAD_FIRST_DAY = 8_000_000  # the load threads' days: far from every phase's


@dataclass(frozen=True)
class LiveRecord:
    """One live rollout and what the check reads off it."""

    day: int
    action: str
    reward: float
    tool_calls: int
    tool_answers: int  # HTTP answers to `tools/call`: more than tool_calls means a retry
    latency_ms: float
    draws: tuple[tuple[str, dict[str, object], int], ...]


async def live_rollout(world_url: str, control: httpx.Client, day: int, action: str) -> LiveRecord:
    """One rollout by the official MCP client, no proxy; its session's draws read, then dropped."""
    async with mcp_client.open_tools(mcp_client.endpoint(world_url, day), timeout=120) as tools:
        rollout = await mcp_agent.run_rollout(
            tools, action, agent_seed(AGENT_BASE, day, ACTIONS.index(action))
        )
        session = tools.session_id or ""
        answers = sum(1 for a in tools.log if a.operation.startswith("tools/call "))
    try:
        listed = (
            control.get("/_draws", params={"session": session}).raise_for_status().json()["draws"]
        )
    finally:
        control.post("/_reset", params=[("branch", session)])
    return LiveRecord(
        day,
        action,
        rollout.reward,
        len(rollout.steps),
        answers,
        sum(step.latency_ms for step in rollout.steps),
        tuple((d["tool"], d["arguments"], int(d["call"])) for d in listed),
    )


def rerender(record: LiveRecord, world_seed: int = 0) -> float:
    """The rollout's reward computed in process from its call numbers (no transport)."""
    desk = mcp_state.Desk(world_seed)
    session = "rerender"
    desk.open_session(session, record.day)
    pending = list(record.draws)

    def call(tool: str, arguments: dict[str, object]) -> dict[str, Any]:
        drawn_tool, drawn_arguments, number = pending.pop(0)
        if (drawn_tool, drawn_arguments) != (tool, arguments):
            raise ValueError(
                f"the world ran {drawn_tool} {drawn_arguments}, not {tool} {arguments}"
            )
        return desk.call(session, tool, arguments, call_number=number)

    seed = agent_seed(AGENT_BASE, record.day, ACTIONS.index(record.action))
    rollout = asyncio.run(mcp_agent.run_rollout(mcp_agent.DeskTools(call), record.action, seed))
    return rollout.reward


@contextmanager
def world_process() -> Iterator[str]:
    """A fresh MCP world on an ephemeral loopback port (killed on exit)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "worldsim", "--world", "mcp", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the MCP world did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def control_client(world_url: str) -> httpx.Client:
    """A client for the world's control routes whose idle connections close before uvicorn's
    (5 s): reusing one the server is closing reset a load thread's connection."""
    return httpx.Client(
        base_url=world_url, timeout=60, limits=httpx.Limits(keepalive_expiry=2.0), trust_env=False
    )


def _load(world_url: str, stop: threading.Event, done: list[int], offset: int) -> None:
    with control_client(world_url) as control:
        day = LOAD_FIRST_DAY + offset * 100_000
        while not stop.is_set():
            asyncio.run(live_rollout(world_url, control, day, ACTIONS[day % 3]))
            done.append(1)
            day += 1


def collect(
    world_url: str, days: Sequence[int], *, workers: int, load_threads: int
) -> dict[str, Any]:
    """Reference rollouts on ``days`` (upgrade on even, compare on odd), beside load threads."""
    stop, done = threading.Event(), list[int]()
    loaders = [
        threading.Thread(target=_load, args=(world_url, stop, done, i)) for i in range(load_threads)
    ]
    for thread in loaders:
        thread.start()
    started = time.perf_counter()
    try:
        with control_client(world_url) as control:

            def one(day: int) -> LiveRecord:
                action = "upgrade" if day % 2 == 0 else "compare"
                return asyncio.run(live_rollout(world_url, control, day, action))

            with ThreadPoolExecutor(max_workers=workers) as pool:
                records = list(pool.map(one, days))
    finally:
        stop.set()
        for thread in loaders:
            thread.join()
    return {
        "records": records,
        "seconds": time.perf_counter() - started,
        "load_rollouts": len(done),
    }


def summary(records: Sequence[LiveRecord]) -> dict[str, Any]:
    """Exact re-renders, retries, reported latency and the independent reference contrast."""
    exact = sum(rerender(r) == r.reward for r in records)
    better = [r.reward for r in records if r.action == "upgrade"]
    worse = [r.reward for r in records if r.action == "compare"]
    contrast = mean_estimate(better).value - mean_estimate(worse).value
    stderr = float(np.hypot(mean_estimate(better).stderr, mean_estimate(worse).stderr))
    return {
        "rollouts": len(records),
        "rerendered_exactly": exact,
        "retries": sum(r.tool_answers - r.tool_calls for r in records),
        "mean_latency_ms_per_call": round(
            sum(r.latency_ms for r in records) / sum(r.tool_calls for r in records), 2
        ),
        "contrast": round(contrast, 4),
        "contrast_stderr": round(stderr, 4),
    }


def paired_contrast_shift(first: dict[str, float], second: dict[str, float]) -> Estimate:
    """How much the reference contrast moved between two phases on the same days and seeds.

    Per day the second phase's reward minus the first's (only the world's draws differ), the
    upgrade days' mean minus the compare days' (even days run upgrade, odd compare).
    """
    better = [second[d] - first[d] for d in first if int(d) % 2 == 0]
    worse = [second[d] - first[d] for d in first if int(d) % 2 == 1]
    return difference(mean_estimate(better), mean_estimate(worse))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_live_check", description=__doc__)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--first-day", type=int, default=500_000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--load-threads", type=int, default=6)
    options = parser.parse_args(argv)
    # A timeout's TERM still stops the world process (the `finally` of `world_process`).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    logging.basicConfig(level=logging.INFO)
    for chatty in ("httpx", "httpx2", "mcp"):  # a line per HTTP request otherwise
        logging.getLogger(chatty).setLevel(logging.WARNING)
    days = list(range(options.first_day, options.first_day + 2 * options.pairs))
    report: dict[str, Any] = {"pairs": options.pairs, "days": [days[0], days[-1]]}
    with world_process() as url:
        for phase, load in (
            ("alone", 0),
            ("beside_load", options.load_threads),
            ("alone_again", 0),
        ):
            got = collect(url, days, workers=options.workers, load_threads=load)
            report[phase] = {
                **summary(got["records"]),
                "seconds": round(got["seconds"], 1),
                "load_threads": load,
                "load_rollouts": got["load_rollouts"],
            }
            logger.info("%s: %s", phase, json.dumps(report[phase]))
            report[phase]["_rewards"] = {f"{r.day}": r.reward for r in got["records"]}
    pairs = {}
    for phase in ("beside_load", "alone_again"):
        shift = paired_contrast_shift(report["alone"]["_rewards"], report[phase]["_rewards"])
        pairs[f"{phase}_minus_alone"] = {
            "contrast": round(shift.value, 4),
            "stderr": round(shift.stderr, 4),
        }
    for phase in ("alone", "beside_load", "alone_again"):
        report[phase].pop("_rewards")
    report["paired_by_rollout"] = pairs
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
