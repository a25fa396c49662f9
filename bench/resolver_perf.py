"""How fast the resolver answers a hit, by tape size, against a bare FastAPI endpoint.

Every proxied request costs one `/v1/resolve`; on a hit that round trip is the whole of
Groundhog's overhead. This script bulk-loads tapes of 1k, 100k and 1M exchanges straight through
the store (not HTTP, so 1M is feasible), starts the real resolver as its own process, and asks
each tape for recorded addresses at a fixed concurrency. In the same run it measures a bare
FastAPI endpoint returning a constant, served by the same uvicorn, taking turns with the tapes
(`interleaved`), and reports throughput and p50/p99 latency as ratios against it. On a
database that outlives the run (`--database-url`), tape names carry the run's time, so earlier
or concurrent runs' tapes are no obstacle, and the run deletes its tapes when it ends.

    python -m bench.resolver_perf [--quick] [--json out.json] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import ChildService, start_child
from bench.load import SLICES, SliceRun, slice_of, summary, take_turns
from bench.perf_tapes import bulk_load, drop_tapes, hit_bodies, tape_name

logger = logging.getLogger("bench.resolver_perf")

BASELINE = "baseline"


async def load_test(url: str, bodies: list[dict[str, Any]], concurrency: int) -> dict[str, float]:
    """Throughput and latency percentiles; every answer must be a `shared` hit (or the baseline)."""
    async with _client(url, concurrency) as client:
        latencies, elapsed = await _ask_all(client, bodies, concurrency)
    return summary(latencies, elapsed)


async def interleaved(
    conditions: dict[str, tuple[str, list[dict[str, Any]]]], concurrency: int, slices: int = SLICES
) -> dict[str, dict[str, float]]:
    """Each condition (name: resolver URL and bodies) asks its bodies at `concurrency`, the
    conditions taking turns slice by slice (`bench.load.take_turns`).

    A baseline measured before a million-exchange tape's turn could be a minute older than it;
    taking turns puts the baseline and every tape in the same moments.
    """
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(_client(url, concurrency))
            for name, (url, _bodies) in conditions.items()
        }

        def turn(name: str, bodies: list[dict[str, Any]]) -> SliceRun:
            async def run(index: int) -> tuple[list[float], float]:
                part = list(slice_of(bodies, index, slices))
                return await _ask_all(clients[name], part, concurrency)

            return run

        turns = {name: turn(name, bodies) for name, (_url, bodies) in conditions.items()}
        taken = await take_turns(turns, slices)
    return {name: summary(*numbers) for name, numbers in taken.items()}


def _client(url: str, concurrency: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(base_url=url, timeout=60, limits=limits, trust_env=False)


async def _ask_all(
    client: httpx.AsyncClient, bodies: list[dict[str, Any]], concurrency: int
) -> tuple[list[float], float]:
    """`bodies` asked by `concurrency` workers: every latency, and the seconds it all took."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    latencies: list[float] = []

    async def worker() -> None:
        while not queue.empty():
            body = queue.get_nowait()
            started = time.perf_counter()
            reply = await client.post("/v1/resolve", json=body)
            latencies.append(time.perf_counter() - started)
            answer = reply.json()
            if reply.status_code != 200 or answer.get("decision") not in ("shared", "baseline"):
                raise RuntimeError(f"expected a hit, got {reply.status_code} {reply.text[:300]}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


def serve_baseline(host: str, port: int) -> None:
    """A bare FastAPI endpoint returning a constant, under the same uvicorn as the resolver."""
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()
    constant = {"action": "serve", "decision": "baseline"}

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/resolve")
    async def resolve() -> dict[str, str]:
        return constant

    uvicorn.run(app, host=host, port=port, log_level="warning")


def _compare(result: dict[str, float], base: dict[str, float]) -> dict[str, float]:
    return {
        **result,
        "throughput_ratio": result["throughput_rps"] / base["throughput_rps"],
        "p50_ratio": result["p50_ms"] / base["p50_ms"],
        "p99_ratio": result["p99_ms"] / base["p99_ms"],
    }


def run(
    sizes: list[int], requests: int, concurrencies: list[int], database_url: str | None
) -> dict[str, Any]:
    """Bulk-load the tapes, start baseline and resolver, measure each tape at each concurrency."""
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="gh-resolver-perf-") as temporary:
        directory = Path(temporary)
        url = database_url or f"sqlite:///{directory / 'perf.sqlite3'}"
        tapes = {size: tape_name(size) for size in sizes}
        children: list[ChildService] = []
        try:
            for size in sizes:
                bulk_load(url, tapes[size], size)
            baseline = start_child(
                "baseline",
                ["bench.resolver_perf", "--serve-baseline"],
                health="http",
                log_dir=directory,
            )
            children.append(baseline)
            arguments = ["--data", str(directory), "--database-url", url, "--log-level", "warning"]
            resolver = start_child(
                "resolver", ["resolver", *arguments], health="http", log_dir=directory
            )
            children.append(resolver)
            # Each (branch, key) pair is asked once, warm-ups included, so every ask is a hit.
            needed = len(concurrencies) * (requests + 50)
            unused = {size: hit_bodies(tapes[size], size, needed, rng) for size in sizes}
            baselines: dict[int, dict[str, float]] = {}
            rows = []
            for concurrency in concurrencies:
                asyncio.run(load_test(baseline.url, [{}] * 50, concurrency))
                conditions: dict[str, tuple[str, list[dict[str, Any]]]] = {
                    BASELINE: (baseline.url, [{}] * requests)
                }
                for size in sizes:
                    bodies = [unused[size].pop() for _ in range(requests + 50)]
                    asyncio.run(load_test(resolver.url, bodies[:50], concurrency))
                    conditions[str(size)] = (resolver.url, bodies[50:])
                measured = asyncio.run(interleaved(conditions, concurrency))
                base = baselines[concurrency] = measured[BASELINE]
                for size in sizes:
                    row = {
                        "exchanges": size,
                        "concurrency": concurrency,
                        **_compare(measured[str(size)], base),
                    }
                    rows.append(row)
                    logger.info("tape %s, concurrency %s: %s", size, concurrency, row)
        finally:
            for child in reversed(children):
                child.stop()
            if database_url:  # a database outlives the run: leave it as it was
                drop_tapes(url, list(tapes.values()))
    return {
        "database": "postgresql" if database_url and "postgresql" in database_url else "sqlite",
        "baselines": {str(c): b for c, b in baselines.items()},
        "tapes": rows,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"resolver hit path on {result['database']}; ratios against a bare FastAPI endpoint "
        "returning a constant, measured in the same run",
        "| exchanges | clients | req/s | x baseline | p50 ms | x baseline | p99 ms | x baseline |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for concurrency, base in result["baselines"].items():
        lines.append(
            f"| baseline | {concurrency} | {base['throughput_rps']:.0f} | 1.00 "
            f"| {base['p50_ms']:.2f} | 1.00 | {base['p99_ms']:.2f} | 1.00 |"
        )
    for row in result["tapes"]:
        lines.append(
            f"| {row['exchanges']:,} | {row['concurrency']} | {row['throughput_rps']:.0f} "
            f"| {row['throughput_ratio']:.2f} | {row['p50_ms']:.2f} | {row['p50_ratio']:.2f} "
            f"| {row['p99_ms']:.2f} | {row['p99_ratio']:.2f} |"
        )
    return "\n".join(lines)


def measure(quick: bool) -> list[dict[str, Any]]:
    """Rows for `python -m bench`: one per tape size and client count, with a summary line."""
    sizes = [1_000] if quick else [1_000, 100_000, 1_000_000]
    result = run(sizes, 300 if quick else 3_000, [1, 8], None)
    rows = []
    for row in result["tapes"]:
        base = result["baselines"][str(row["concurrency"])]
        rows.append(
            {
                "name": f"resolver hit, {row['exchanges']:,} exchanges, "
                f"{row['concurrency']} client(s)",
                "summary": (
                    f"p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms; "
                    f"{row['throughput_rps']:.0f} resolves/s; "
                    f"{row['throughput_ratio']:.2f}x the throughput and "
                    f"{row['p50_ratio']:.1f}x the p50 of a bare FastAPI endpoint "
                    f"({base['throughput_rps']:.0f}/s) in the same run"
                ),
                **row,
                "baseline_throughput_rps": base["throughput_rps"],
                "baseline_p50_ms": base["p50_ms"],
                "baseline_p99_ms": base["p99_ms"],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.resolver_perf", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="small tapes (1k, 10k), fewer requests"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--database-url", help="measure on this database instead of SQLite")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 8], help="client counts to measure"
    )
    parser.add_argument("--serve-baseline", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if args.serve_baseline:
        serve_baseline(args.host, args.port)
        return
    sizes = [1_000, 10_000] if args.quick else [1_000, 100_000, 1_000_000]
    requests = 300 if args.quick else 3_000
    result = run(sizes, requests, args.concurrency, args.database_url)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    sys.stdout.write(table(result) + "\n")


if __name__ == "__main__":
    main()
