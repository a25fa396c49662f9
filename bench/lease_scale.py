"""N sidecar proxies against one shared resolver: what branch leases change at scale.

Every hit through a plain Groundhog proxy is a round trip to the one resolver and its store, so
at many concurrent rollouts the shared resolver, not the sidecars, runs out. This script starts
one resolver (on a fresh SQLite file, or the database `--database-url` names) and, for each N,
N sidecar proxies, first asking the resolver for every hit (`groundhog_branch_leases=false`)
and then taking branch leases (the default since issue 54). Through each sidecar one branch
records its own addresses and a sibling then asks them all, one client per sidecar, every
sidecar at once. Per N and mode it reports the siblings' aggregate hit throughput, their p50,
the resolver's CPU per 1000 hits (from /proc, shipped batches included) and how many
`/v1/resolve` calls the hits cost (a count from the resolver's own metrics: every hit with
plain proxies, none with leases). Ratios are leased against plain at the same N, measured in
the same run.

    python -m bench.lease_scale [--sidecars 1,2,4,8] [--requests 200] [--database-url URL]
                                [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.harness import ChildService, await_child, cpu_seconds, spawn_child, start_child
from bench.perf_tapes import bulk_load
from bench.proxy_load import load, proxy_with_identity, urls_for
from bench.proxy_rows import store_label
from bench.proxy_stack import (
    child_processes,
    delete_tapes,
    fork_children,
    open_tape,
    proxy_arguments,
    resolver_arguments,
)
from proxy.options import SECONDS_OPTIONS

logger = logging.getLogger("bench.lease_scale")

MODES = {
    "plain": ("--set", "groundhog_branch_leases=false"),
    "leased": ("--set", "groundhog_branch_leases=true"),
}
# The resolver's store under `--data` when no `--database-url` is given (resolver/settings.py).
SQLITE_FILE = "groundhog.sqlite3"
# A leased sidecar's batches land within a ship window (and a round trip).
# The store's statements per lease call, each held by a test: a shipped batch's and a
# renewal's in tests/store/test_branch_leases.py, a take's and a read-ahead's in
# tests/engine/test_leased_hits.py.
STATEMENTS = {"events": 3, "renew": 2, "take": 7, "ahead": 1}
SHIPPED_WITHIN_SECONDS = SECONDS_OPTIONS["groundhog_lease_ship_seconds"][0] + 0.5
_RESOLVES = re.compile(r"^groundhog_resolve_seconds_count (\S+)$", re.MULTILINE)
_LEASE_CALLS = re.compile(r'^groundhog_lease_calls_total\{call="(\w+)"\} (\S+)$', re.MULTILINE)


def resolves(resolver_url: str) -> int:
    """How many `/v1/resolve` calls the resolver has answered (its own metric)."""
    text = httpx.get(f"{resolver_url}/metrics", trust_env=False, timeout=30).text
    found = _RESOLVES.search(text)
    if found is None:
        raise RuntimeError("the resolver's /metrics has no groundhog_resolve_seconds_count")
    return int(float(found.group(1)))


def lease_calls(resolver_url: str) -> dict[str, int]:
    """How many lease takes, shipped batches and renewals the resolver has answered."""
    text = httpx.get(f"{resolver_url}/metrics", trust_env=False, timeout=30).text
    return {call: int(float(count)) for call, count in _LEASE_CALLS.findall(text)}


def start_sidecars(
    resolver_url: str, work: Path, count: int, mode: str, kids: list[ChildService]
) -> list[ChildService]:
    """`count` Groundhog proxies on the resolver, each with a data directory of its own."""
    started = []
    for index in range(count):
        data = work / f"{mode}-{count}-{index}"
        data.mkdir()
        command = [*proxy_arguments(resolver_url, data), *MODES[mode]]
        child = spawn_child(f"{mode}-{count}-{index}", command, log_dir=work)
        kids.append(child)
        started.append(child)
    return [await_child(child, health="tcp") for child in started]


def measure_one(
    resolver: ChildService,
    upstream_url: str,
    sidecars: list[ChildService],
    mode: str,
    per_sidecar: int,
    tape: str,
    bulk_store: str | None = None,
    exchanges: int = 0,
) -> dict[str, Any]:
    """One sidecar count in one mode: each sidecar's recorder, then its sibling timed. With
    `exchanges`, the tape first holds that many others, written straight into `bulk_store`."""
    count = len(sidecars)
    if exchanges and bulk_store:
        bulk_load(bulk_store, tape, exchanges)
        branches = fork_children(resolver.url, tape, 2 * count)
    else:
        branches = open_tape(resolver.url, tape, 2 * count)
    recorders, siblings = branches[:count], branches[count:]
    urls = urls_for(upstream_url, count, per_sidecar, tape)

    def through(names: list[str]) -> list[str | None]:
        pairs = zip(sidecars, names, strict=True)
        return [proxy_with_identity(child.port, tape, name) for child, name in pairs]

    asyncio.run(load(through(recorders), urls))  # recorded through each sidecar (kept if leased)
    hitters = through(siblings)
    # Both counts are read before the CPU is: rendering /metrics is not a hit's cost.
    asked_before, calls_before = resolves(resolver.url), lease_calls(resolver.url)
    cpu_before = cpu_seconds(resolver.process.pid)
    numbers = asyncio.run(load(hitters, urls))
    time.sleep(SHIPPED_WITHIN_SECONDS)
    cpu_used = cpu_seconds(resolver.process.pid) - cpu_before
    calls = {
        call: made - calls_before.get(call, 0) for call, made in lease_calls(resolver.url).items()
    }
    hits = count * per_sidecar
    return {
        "sidecars": count,
        "mode": mode,
        "hits": hits,
        "tape_exchanges": exchanges,
        "p50_ms": numbers["p50_ms"],
        "throughput_rps": numbers["throughput_rps"],
        "resolver_cpu_ms_per_1000": round(1e6 * cpu_used / hits, 1),
        "resolves_per_hit": round((resolves(resolver.url) - asked_before) / hits, 3),
        # The store's statements these cost (STATEMENTS), over the hits they served.
        "lease_calls": calls,
        "store_statements_per_hit": round(
            sum(STATEMENTS[call] * made for call, made in calls.items() if call in STATEMENTS)
            / hits,
            3,
        ),
    }


def measure(
    counts: Sequence[int], per_sidecar: int, database_url: str | None, exchanges: int = 0
) -> list[dict[str, Any]]:
    run = time.time_ns()
    rows: list[dict[str, Any]] = []
    tapes: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="gh-lease-scale-") as temporary,
        child_processes() as kids,
    ):
        work = Path(temporary)
        upstream = start_child(
            "upstream", ["bench.proxy_perf", "--serve-upstream"], health="tcp", log_dir=work
        )
        kids.append(upstream)
        resolver = start_child(
            "resolver", resolver_arguments(work, database_url), health="http", log_dir=work
        )
        kids.append(resolver)
        try:
            for count in counts:
                for mode in MODES:
                    sidecars = start_sidecars(resolver.url, work, count, mode, kids)
                    tape = f"scale-{mode}-{count}-{run}"
                    tapes.append(tape)
                    try:
                        bulk_store = database_url or f"sqlite:///{work / SQLITE_FILE}"
                        measured = measure_one(
                            resolver,
                            upstream.url,
                            sidecars,
                            mode,
                            per_sidecar,
                            tape,
                            bulk_store,
                            exchanges,
                        )
                        rows.append(measured)
                    finally:
                        for child in sidecars:
                            child.stop()
                            kids.remove(child)
        finally:
            if database_url:  # a database outlives the run: leave it as it was
                delete_tapes(resolver.url, tapes)
    return [{**row, "store": store_label(database_url)} for row in with_ratios(rows)]


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each leased row with its throughput and resolver CPU against the plain row at its N."""
    plain = {row["sidecars"]: row for row in rows if row["mode"] == "plain"}
    out = []
    for row in rows:
        base = plain.get(row["sidecars"])
        if row["mode"] == "leased" and base is not None:
            row = {
                **row,
                "throughput_vs_plain": round(row["throughput_rps"] / base["throughput_rps"], 3),
                "resolver_cpu_vs_plain": round(
                    row["resolver_cpu_ms_per_1000"] / base["resolver_cpu_ms_per_1000"], 3
                ),
            }
        out.append(row)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    stores = ", ".join(dict.fromkeys(str(row["store"]) for row in rows))
    lines = [
        f"N sidecars against one resolver; the resolver's store: {stores}",
        "",
        "| sidecars | mode | hits | p50 ms | hits/s | resolver CPU ms / 1000 hits "
        "| resolves per hit | lease takes / read-aheads / batches / renewals "
        "| lease statements per hit | hits/s vs plain | resolver CPU vs plain |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        versus = (
            f"{row['throughput_vs_plain']:.2f}x | {row['resolver_cpu_vs_plain']:.2f}x"
            if "throughput_vs_plain" in row
            else "— | —"
        )
        lines.append(
            f"| {row['sidecars']} | {row['mode']} | {row['hits']} | {row['p50_ms']:.2f} "
            f"| {row['throughput_rps']:.0f} | {row['resolver_cpu_ms_per_1000']:.0f} "
            f"| {row['resolves_per_hit']:.2f} | {lease_columns(row)} | {versus} |"
        )
    return "\n".join(lines)


def lease_columns(row: dict[str, Any]) -> str:
    calls = row["lease_calls"]
    if row["mode"] != "leased":
        return "— | —"
    made = " / ".join(str(calls.get(call, 0)) for call in ("take", "ahead", "events", "renew"))
    return f"{made} | {row['store_statements_per_hit']:.3f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.lease_scale", description=__doc__)
    parser.add_argument(
        "--sidecars",
        default="1,2,4,8",
        help="comma-separated numbers of sidecar proxies (default 1,2,4,8)",
    )
    parser.add_argument("--requests", type=int, default=200, help="hits per sidecar")
    parser.add_argument("--database-url", metavar="URL", help="the resolver's store")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--tape-exchanges",
        type=int,
        default=0,
        metavar="N",
        help="first fill each measured tape with N other exchanges (e.g. 1000000)",
    )
    args = parser.parse_args(argv)
    try:
        counts = [int(part) for part in args.sidecars.split(",") if part.strip()]
    except ValueError:
        parser.error(
            f"--sidecars takes numbers separated by commas (e.g. 1,2,4): {args.sidecars!r}"
        )
    if not counts or min(counts) < 1 or args.requests < 1 or args.tape_exchanges < 0:
        parser.error(
            "--sidecars needs numbers of at least 1, --requests at least 1, "
            "--tape-exchanges at least 0"
        )
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    rows = measure(counts, args.requests, args.database_url, args.tape_exchanges)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    sys.stdout.write(table(rows) + "\n")


if __name__ == "__main__":
    main()
