"""What the branch capability check costs a hit, measured alone (issue 53's speed budget).

Under `branch_capabilities: required` every resolve, hits included, checks the capability the
worker presents (resolver/capabilities.py): the proxy parses it from the worker's credentials
and forwards it, the resolver derives (or recalls) the branch's capability and compares. The
issue's budget is that this costs under 5% of a hit. The `hit path` row cannot show it: the
check is a few microseconds against a hit of milliseconds, well below one run's noise against
another. So this row measures only that difference, in one run: two tapes on the same resolver
and proxy, one `required` (its hitting branch presents its capability in the proxy URL, as
`groundhog env` exports it) and one `optional` (no capability presented), each tape's addresses
recorded by a sibling beforehand; then rounds in which both hit their own addresses, the order
alternating round by round, so a neighbour's load on the shared machine falls on both. The row
is the geometric mean over rounds of (required's p50 / optional's p50) with a Student t
interval on the log ratios (`bench.intervals.t_mean`), and each side's p50 over all rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.harness import LOOPBACK
from bench.intervals import t_mean
from bench.load import timed
from bench.proxy_load import get_ok, load, load_session
from bench.proxy_stack import (
    child_processes,
    delete_tapes,
    start_proxy,
    start_upstream_and_resolver,
)
from groundhog.worker_env import proxy_url_with_credentials

CAPABILITY_ROW = "capability check: hit, required (presented) / optional (none)"
REQUIRED, OPTIONAL = "required", "optional"
SIDES = (REQUIRED, OPTIONAL)  # each side's tape is `<tape>-<side>`
GOAL = 1.05  # the budget: under 5% of a hit
ROUND_SIZE = 8  # hits per condition per round
ROUNDS, QUICK_ROUNDS = 120, 60  # 20 rounds left a +-8% interval on a loaded machine


def open_capability_tape(resolver_url: str, tape: str, policy: str) -> dict[str, str]:
    """`tape` with `branch_capabilities: policy`, forked into two branches (a recorder and a
    hitter): each one's capability, by name, in fork order."""
    created = httpx.post(
        f"{resolver_url}/v1/tapes",
        json={"name": tape, "branch_capabilities": policy},
        trust_env=False,
        timeout=30,
    )
    if created.status_code != 201:
        raise RuntimeError(f"tape {tape} not created: {created.status_code} {created.text:.300}")
    forked = httpx.post(
        f"{resolver_url}/v1/tapes/{tape}/fork",
        json={"parent": "root", "children": 2},
        trust_env=False,
        timeout=120,
    )
    forked.raise_for_status()
    answer = forked.json()
    return {branch: answer["capabilities"][branch] for branch in answer["branches"]}


def capability_row(rounds: Sequence[dict[str, list[float]]]) -> dict[str, Any]:
    """The row from each round's latencies (seconds) per condition: the geometric mean of the
    per-round p50 ratios (required / optional) with its 95% interval, and each side's p50 (ms)
    over every round."""
    logs = [
        math.log(statistics.median(taken[REQUIRED]) / statistics.median(taken[OPTIONAL]))
        for taken in rounds
    ]
    interval = t_mean(logs)
    low, high = interval["low"], interval["high"]
    every = {side: [x for taken in rounds for x in taken[side]] for side in SIDES}
    return {
        "condition": CAPABILITY_ROW,
        "clients": 1,
        "rounds": len(rounds),
        "requests": sum(len(values) for values in every.values()),
        "required_p50_ms": statistics.median(every[REQUIRED]) * 1000,
        "optional_p50_ms": statistics.median(every[OPTIONAL]) * 1000,
        "capability_ratio": math.exp(float(interval["value"] or 0.0)),
        "capability_ratio_low": math.exp(low) if low is not None else None,
        "capability_ratio_high": math.exp(high) if high is not None else None,
    }


def describe(row: dict[str, Any]) -> str:
    """One sentence for the table: the ratio, its interval and the goal's verdict."""
    low, high = row["capability_ratio_low"], row["capability_ratio_high"]
    interval = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else "[-]"
    verdict = "met" if high is not None and high < GOAL else "not shown"
    return (
        f"The capability check (goal: under {GOAL - 1:.0%} of a hit): a hit under `required`, "
        f"presenting the capability, takes {row['capability_ratio']:.3f}x a hit under "
        f"`optional` without one (95% interval {interval}, {row['rounds']} alternating rounds; "
        f"p50 {row['required_p50_ms']:.2f} against {row['optional_p50_ms']:.2f} ms): {verdict}"
    )


async def _rounds(
    proxies: dict[str, str], urls: dict[str, list[str]], rounds: int
) -> list[dict[str, list[float]]]:
    taken: list[dict[str, list[float]]] = []
    async with load_session() as session:

        async def ask(proxy: str, url: str) -> None:
            await get_ok(session, proxy, url)

        for index in range(rounds):
            order = (REQUIRED, OPTIONAL) if index % 2 == 0 else (OPTIONAL, REQUIRED)
            this: dict[str, list[float]] = {}
            for side in order:
                part = urls[side][index * ROUND_SIZE : (index + 1) * ROUND_SIZE]
                this[side], _ = await timed(ask, [proxies[side]], [part])
            taken.append(this)
    return taken


def measure_capability_cost(
    resolver_url: str, proxy_port: int, upstream_url: str, tape: str, rounds: int
) -> dict[str, Any]:
    """Open the two tapes (`tape`-required, `tape`-optional), record their addresses, warm
    both hitters, then measure `rounds` alternating rounds; the row."""
    proxies: dict[str, str] = {}
    urls: dict[str, list[str]] = {}
    base = f"http://{LOOPBACK}:{proxy_port}"
    for side in SIDES:
        name = f"{tape}-{side}"
        (recorder, recorder_key), (hitter, hitter_key) = open_capability_tape(
            resolver_url, name, side
        ).items()
        presented = side == REQUIRED  # under `optional` nothing is presented, nothing checked
        recording = proxy_url_with_credentials(
            base, name, recorder, recorder_key if presented else None
        )
        proxies[side] = proxy_url_with_credentials(
            base, name, hitter, hitter_key if presented else None
        )
        count = (rounds + 1) * ROUND_SIZE  # a round of warm-up first
        urls[side] = [f"{upstream_url}/item?cap={side}&i={i}&t={tape}" for i in range(count)]
        asyncio.run(load([recording], [urls[side]]))
    warm = {side: urls[side][:ROUND_SIZE] for side in urls}
    asyncio.run(_rounds(proxies, warm, 1))
    measured = {side: urls[side][ROUND_SIZE:] for side in urls}
    return capability_row(asyncio.run(_rounds(proxies, measured, rounds)))


def measure(quick: bool = False, database_url: str | None = None) -> dict[str, Any]:
    """The row alone, on an upstream, resolver and proxy of its own (`python -m bench.proxy_perf`
    measures it beside the other rows, on its own processes)."""
    with (
        tempfile.TemporaryDirectory(prefix="gh-capability-cost-") as temporary,
        child_processes() as kids,
    ):
        work = Path(temporary)
        upstream, resolver = start_upstream_and_resolver(work, database_url, kids)
        proxy = start_proxy("proxy", resolver.url, work)
        kids.append(proxy)
        tape = f"capability-cost-{time.time_ns()}"
        try:
            row = measure_capability_cost(
                resolver.url,
                proxy.port,
                upstream.url,
                tape,
                rounds=QUICK_ROUNDS if quick else ROUNDS,
            )
        finally:
            if database_url:  # a database outlives the run: leave it as it was
                delete_tapes(resolver.url, [f"{tape}-{side}" for side in SIDES])
    return row


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.capability_cost", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROUNDS} rounds, not {ROUNDS}")
    parser.add_argument("--json", type=Path, help="also write the row here")
    parser.add_argument("--database-url", metavar="URL", help="the resolver's store")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    row = measure(quick=args.quick, database_url=args.database_url)
    if args.json:
        args.json.write_text(json.dumps(row, indent=2))
    sys.stdout.write(describe(row) + "\n")


if __name__ == "__main__":
    main()
