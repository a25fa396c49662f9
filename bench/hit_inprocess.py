"""What one resolve hit costs inside the resolver process, without HTTP around it.

`bench.resolver_perf` measures a hit through uvicorn, where the framework's share hides the
store's; this calls `Resolver.resolve` directly in a loop on a real SQLite file (or PostgreSQL)
and reports wall p50 and CPU time per hit, so a change to the resolve transaction can be
compared against its parent commit in the same conditions. `--on-loop` measures the event-loop
lane the resolve route takes first on SQLite (resolver/resolve_tx's loop lane, through the
loop writer, store/loop_writes.py) instead of the thread lane, `Resolver.resolve`. `--profile`
writes a cProfile dump of the measured loop.

    python -m bench.hit_inprocess [--hits N] [--rounds R] [--database-url URL] [--on-loop]
                                  [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench.perf_tapes import BRANCHES, bulk_load, resolve_body
from engine.policy import Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution, Waiting
from resolver import resolve_tx
from resolver.resolution import Resolver
from resolver.resolve_tx.units import loop_writer_for
from store.db import open_store

logger = logging.getLogger("bench.hit_inprocess")


def measure(
    url: str, hits: int, rounds: int, profile: Path | None, *, on_loop: bool = False
) -> dict[str, Any]:
    """Per-hit wall p50 and mean CPU over `rounds` rounds of `hits` distinct hits (warm cache)."""
    size = max(1, (hits * rounds + hits) // BRANCHES + 1)
    tape = f"hits{time.time_ns()}"  # a PostgreSQL database may hold earlier runs' tapes
    store = open_store(url)
    loop_writer = loop_writer_for(store, enabled=on_loop)
    if on_loop and loop_writer is None:
        store.dispose()
        raise SystemExit("--on-loop needs a SQLite store at synchronous=NORMAL")
    bulk_load(url, tape, size)
    resolver = Resolver(store, max_body_bytes=1 << 20, claim_seconds=30, loop_writer=loop_writer)
    hit = _hit_on_loop if on_loop else _hit
    asks = [
        ResolveRequest(**resolve_body(tape, f"root/b{pick % BRANCHES}", pick // BRANCHES))
        for pick in range(hits * (rounds + 1))
    ]
    # Every (branch, key) is asked once, so each is occurrence 0 on its branch: a hit. The
    # branches of one key ask in turn, so all but the first find its answer cached, as siblings
    # of a fan-out do. The first round warms statement compilation.
    for ask in asks[:hits]:
        hit(resolver, ask)
    walls: list[float] = []
    cpu = 0.0
    profiler = cProfile.Profile() if profile is not None else None
    for round_index in range(1, rounds + 1):
        chunk = asks[round_index * hits : (round_index + 1) * hits]
        cpu_started = time.process_time()
        if profiler is not None:
            profiler.enable()
        for ask in chunk:
            started = time.perf_counter()
            hit(resolver, ask)
            walls.append(time.perf_counter() - started)
        if profiler is not None:
            profiler.disable()
        cpu += time.process_time() - cpu_started
    if profiler is not None and profile is not None:
        profiler.dump_stats(profile)
    if loop_writer is not None:
        loop_writer.close()
    store.dispose()
    return {
        "database": url.split(":", 1)[0],
        "path": "event loop" if on_loop else "thread",
        "hits": len(walls),
        "p50_us": 1e6 * statistics.median(walls),
        "mean_us": 1e6 * statistics.fmean(walls),
        "cpu_us": 1e6 * cpu / len(walls),
    }


def _hit(resolver: Resolver, ask: ResolveRequest) -> None:
    _expect_shared(resolver.resolve(ask))


def _hit_on_loop(resolver: Resolver, ask: ResolveRequest) -> None:
    taken = resolve_tx.on_loop(resolver.loop_writer, partial(resolver.take, ask))
    if taken is None:
        raise RuntimeError("the loop writer declined a hit with no other writer running")
    _expect_shared(resolver.finish(taken))


def _expect_shared(answer: Resolution | Waiting) -> None:
    if not isinstance(answer, Resolution) or answer.decision is not Decision.SHARED:
        raise RuntimeError(f"expected a shared hit, got {answer!r:.300}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.hit_inprocess", description=__doc__)
    parser.add_argument("--hits", type=int, default=2000, help="hits per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument(
        "--on-loop", action="store_true", help="measure the event-loop path (SQLite only)"
    )
    parser.add_argument("--profile", type=Path, help="write a cProfile dump of the loop here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with tempfile.TemporaryDirectory() as directory:
        url = args.database_url or f"sqlite:///{Path(directory) / 'hits.sqlite3'}"
        result = measure(url, args.hits, args.rounds, args.profile, on_loop=args.on_loop)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
