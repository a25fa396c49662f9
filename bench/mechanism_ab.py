"""Is a resolver speed mechanism worth its code? An interleaved A/B in one run (issue 54).

Since branch leases are the default, a sidecar serves its branch's hits itself and the
resolver's hit path carries only what no sidecar holds. Issue 54 asks that every speed
mechanism no longer on the default path go unless an interleaved A/B in one run shows it is
worth at least 5% on the row it exists for. Two have a switch and one row: the hot protocol
(`GROUNDHOG_HOT_PROTOCOL`, resolver/hot_protocol.py: the proxy's routes answered inside
uvicorn's protocol, ahead of ASGI) and the loop lane (`GROUNDHOG_RESOLVE_ON_EVENT_LOOP`,
store/loop_writes.py: a resolve's transaction on the event loop, sparing a thread hop). Both
exist for the resolver's hit as the proxy asks it, one at a time.

The script bulk-loads one tape (bench/perf_tapes.py), copies the SQLite file once per
condition so no two resolvers share a writer, starts one resolver per condition (every
mechanism on; each one off in turn), and asks distinct hits (each a `shared` answer) with the
proxy's own client. In each round the conditions take turns slice by slice
(bench/load.take_turns), the order rotating from round to round; each round gives one p50 and
one throughput per condition. A mechanism's worth is off/on p50 at 1 client (declared before
the first run, the row both were built for) with a Student t interval over rounds; it is kept
when that interval's lower bound is at least 1.05. Throughput at 8 clients is reported beside
it, not gated.

    python -m bench.mechanism_ab [--rounds 10] [--requests 300] [--exchanges 20000] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from bench import intervals
from bench.harness import ChildService, start_child
from bench.load import SliceRun, slice_of, summary, take_turns, timed
from bench.perf_tapes import bulk_load, hit_bodies, tape_name
from groundhog.protocol.wire import ResolveAsk
from proxy.resolver_client import ResolverClient

logger = logging.getLogger("bench.mechanism_ab")

ALL_ON = "every mechanism on"
# A mechanism's switch: the resolver setting that turns it off.
MECHANISMS: dict[str, dict[str, str]] = {
    "hot protocol": {"GROUNDHOG_HOT_PROTOCOL": "false"},
    "loop lane": {"GROUNDHOG_RESOLVE_ON_EVENT_LOOP": "false"},
}
KEEP_AT = 1.05  # off/on p50 at 1 client: the interval's lower bound must reach it
CLIENTS = (1, 8)
SLICES = 3


async def _round(
    clients: Mapping[str, ResolverClient], bodies: Mapping[str, list[dict[str, Any]]], width: int
) -> dict[str, dict[str, float]]:
    """One round: each condition asks its bodies, `width` at a time, the conditions taking
    turns slice by slice in the order `clients` gives."""

    def turn(name: str) -> SliceRun:
        async def run(index: int) -> tuple[list[float], float]:
            part = list(slice_of(bodies[name], index, SLICES))
            lanes = cast(list[list[str]], [part[lane::width] for lane in range(width)])

            async def ask(_lane: int, body: Any) -> None:
                answer = await clients[name].resolve(cast(ResolveAsk, body))
                if answer.get("decision") != "shared":
                    raise RuntimeError(f"{name}: expected a hit, got {answer}")

            return await timed(ask, list(range(width)), lanes)

        return run

    taken = await take_turns({name: turn(name) for name in clients}, SLICES)
    return {name: summary(*numbers) for name, numbers in taken.items()}


async def _measure(
    urls: Mapping[str, str], bodies: list[dict[str, Any]], rounds: int, requests: int
) -> dict[int, list[dict[str, dict[str, float]]]]:
    """Per client count, each round's summary per condition; every body asked once."""
    clients = {name: ResolverClient(url, resolve_timeout=60) for name, url in urls.items()}
    names = list(urls)
    measured: dict[int, list[dict[str, dict[str, float]]]] = {}
    try:
        warm = {name: bodies[:50] for name in names}
        await _round(clients, warm, 1)  # connections and caches, for every condition alike
        cursor = 50
        for width in CLIENTS:
            measured[width] = []
            for index in range(rounds):
                chunk = bodies[cursor : cursor + requests]
                cursor += requests
                order = names[index % len(names) :] + names[: index % len(names)]
                turn_clients = {name: clients[name] for name in order}
                result = await _round(turn_clients, dict.fromkeys(order, chunk), width)
                measured[width].append(result)
    finally:
        for client in clients.values():
            await client.close()
    return measured


def verdicts(
    measured: Mapping[int, Sequence[Mapping[str, Mapping[str, float]]]],
) -> list[dict[str, Any]]:
    """Per mechanism: off/on p50 at 1 client with its t interval and the verdict, and on/off
    throughput at 8 clients beside it (each round's ratio one observation)."""
    rows = []
    for mechanism in MECHANISMS:
        latency = [r[mechanism]["p50_ms"] / r[ALL_ON]["p50_ms"] for r in measured[1]]
        throughput = [
            r[ALL_ON]["throughput_rps"] / r[mechanism]["throughput_rps"] for r in measured[8]
        ]
        gated = intervals.t_mean(latency)
        low = gated["low"]
        rows.append(
            {
                "mechanism": mechanism,
                "off_over_on_p50_1_client": gated,
                "on_over_off_throughput_8_clients": intervals.t_mean(throughput),
                "rounds": len(latency),
                "verdict": "kept" if low is not None and low >= KEEP_AT else "goes",
            }
        )
    return rows


def run(rounds: int, requests: int, exchanges: int) -> dict[str, Any]:
    tape = tape_name(exchanges)
    with tempfile.TemporaryDirectory(prefix="gh-mechanism-ab-") as temporary:
        directory = Path(temporary)
        loaded = directory / "loaded.sqlite3"
        bulk_load(f"sqlite:///{loaded}", tape, exchanges)
        children: list[ChildService] = []
        try:
            urls = {}
            for index, (name, switch) in enumerate({ALL_ON: {}, **MECHANISMS}.items()):
                data = directory / f"condition-{index}"
                data.mkdir()
                shutil.copy(loaded, data / "groundhog.sqlite3")
                child = start_child(
                    f"resolver-{index}",
                    ["resolver", "--data", str(data), "--log-level", "warning"],
                    health="http",
                    log_dir=directory,
                    env=switch,
                )
                children.append(child)
                urls[name] = child.url
            needed = 50 + rounds * requests * len(CLIENTS)
            bodies = hit_bodies(tape, exchanges, needed, random.Random(54))
            if len(bodies) < needed:
                raise SystemExit(f"--exchanges {exchanges} holds too few hits for the rounds")
            measured = asyncio.run(_measure(urls, bodies, rounds, requests))
        finally:
            for child in reversed(children):
                child.stop()
    return {
        "rounds": rounds,
        "requests_per_round": requests,
        "exchanges": exchanges,
        "keep_at": KEEP_AT,
        "mechanisms": verdicts(measured),
        "raw": {str(width): rounds_of for width, rounds_of in measured.items()},
    }


def table(result: Mapping[str, Any]) -> str:
    lines = [
        f"resolver speed mechanisms, interleaved A/B, {result['rounds']} rounds of "
        f"{result['requests_per_round']} hits; kept when off/on p50 at 1 client has its 95% "
        f"lower bound >= {result['keep_at']}",
        "| mechanism | off/on p50, 1 client [95% t] | on/off throughput, 8 clients | verdict |",
        "|---|---:|---:|---|",
    ]
    for row in result["mechanisms"]:
        gated, beside = row["off_over_on_p50_1_client"], row["on_over_off_throughput_8_clients"]
        lines.append(
            f"| {row['mechanism']} | {gated['value']:.3f}x [{gated['low']:.3f}, "
            f"{gated['high']:.3f}] | {beside['value']:.3f}x [{beside['low']:.3f}, "
            f"{beside['high']:.3f}] | {row['verdict']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.mechanism_ab", description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--requests", type=int, default=300, help="hits per condition a round")
    parser.add_argument("--exchanges", type=int, default=20000)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if args.rounds < 2 or args.requests < 2 * SLICES:
        parser.error(f"--rounds must be 2 or more and --requests {2 * SLICES} or more")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    result = run(args.rounds, args.requests, args.exchanges)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    sys.stdout.write(table(result) + "\n")


if __name__ == "__main__":
    main()
