"""`python -m bench.soak`: sustained concurrent load through the real proxy, on loopback.

Groundhog sits on every request of every rollout, so it must hold up under the concurrency of a
real RL run: many workers on many branches, shared reads racing for single flight, writes
bumping versions. This starts a counting upstream, the resolver and the proxy as child
processes, drives `--workers` workers over `--branches` fork children for at most `--seconds`
and `--max-requests`, and reports errors the world did not cause (must be zero), p50/p99
latency, throughput (also as a ratio against the same workers calling the upstream directly,
measured in the same run), live calls against forward decisions, and the resolver's and
proxy's resident memory over time with a flatness verdict.

    python -m bench.soak --workers 64 --branches 16 --seconds 60 --max-requests 200000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.reliability.load import LoadPlan, LoadResult, drive, percentile
from bench.reliability.memory import MemorySampler
from bench.reliability.processes import children
from bench.reliability.stack import start_stack
from groundhog.protocol.decisions import FORWARD_DECISIONS as FORWARDED
from groundhog.protocol.decisions import Decision

logger = logging.getLogger(__name__)

FORWARD_DECISIONS = FORWARDED - {Decision.UPSTREAM_FAILED}


def summarize_load(result: LoadResult) -> dict[str, Any]:
    outcomes = result.outcomes
    good = [o for o in outcomes if o.ok]
    bad = [o for o in outcomes if not o.ok]
    latencies = [o.latency for o in good]
    return {
        "requests": len(outcomes),
        "ok": len(good),
        "errors": len(bad),
        "error_examples": [
            {"path": o.path, "status": o.status, "error": o.error, "problem": o.problem_type}
            for o in bad[:10]
        ],
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "throughput_rps": round(len(good) / result.elapsed, 1),
        "seconds": round(result.elapsed, 2),
        "decisions": dict(Counter(o.decision or "none" for o in outcomes)),
    }


def run_soak(
    *,
    workers: int = 64,
    branches: int = 16,
    seconds: float = 20.0,
    max_requests: int = 100_000,
    root: Path | None = None,
    baseline_seconds: float | None = None,
) -> dict[str, Any]:
    """Run the soak and return its figures (see the module docstring)."""
    with (
        tempfile.TemporaryDirectory(prefix="gh-soak-") as scratch,
        children(Path(root or scratch)) as group,
    ):
        base = Path(root or scratch)
        stack = start_stack(group, base)
        tape, branch_paths = stack.open_tape("soak", branches)
        plan = LoadPlan(
            proxies=[stack.proxies[0].url],
            upstream_url=stack.upstream.url,
            tape=tape,
            branches=branch_paths,
            workers=workers,
            seconds=seconds,
            max_requests=max_requests,
        )
        before = stack.upstream_stats()["calls"]
        with MemorySampler([stack.resolver, stack.proxies[0]]) as sampler:
            result = asyncio.run(drive(plan))
        live_calls = stack.upstream_stats()["calls"] - before
        baseline = _baseline(plan, baseline_seconds or min(3.0, max(1.0, seconds / 6)))
        summary = summarize_load(result)
        forwards = sum(
            count
            for decision, count in summary["decisions"].items()
            if decision in FORWARD_DECISIONS
        )
        memory = sampler.summaries()
        return {
            "workers": workers,
            "branches": branches,
            "max_requests": max_requests,
            **summary,
            "world_live_calls": live_calls,
            "forward_decisions": forwards,
            "silent_live_calls": max(0, live_calls - forwards),
            "baseline_direct": baseline,
            "throughput_vs_direct": round(
                summary["throughput_rps"] / max(baseline["throughput_rps"], 1e-9), 3
            ),
            "p50_vs_direct": round(summary["p50_ms"] / max(baseline["p50_ms"], 1e-9), 2),
            "memory": memory,
            "memory_flat": all(series["flat"] is not False for series in memory),
            "held": summary["errors"] == 0 and live_calls <= forwards,
        }


def _baseline(plan: LoadPlan, seconds: float) -> dict[str, Any]:
    """The same workers calling the upstream with no proxy: the run's own yardstick."""
    direct = LoadPlan(
        proxies=[""],
        upstream_url=plan.upstream_url,
        tape=plan.tape,
        branches=plan.branches,
        workers=plan.workers,
        seconds=seconds,
        max_requests=plan.max_requests,
    )
    summary = summarize_load(asyncio.run(drive(direct)))
    return {
        key: summary[key] for key in ("requests", "errors", "p50_ms", "p99_ms", "throughput_rps")
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--branches", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0, help="upper bound on the load phase")
    parser.add_argument("--max-requests", type=int, default=200_000, help="upper bound on requests")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.workers < 1 or args.branches < 1 or args.seconds <= 0 or args.max_requests < 1:
        parser.error("--workers, --branches, --seconds and --max-requests must be positive")
    figures = run_soak(
        workers=args.workers,
        branches=args.branches,
        seconds=args.seconds,
        max_requests=args.max_requests,
    )
    text = json.dumps(figures, indent=2, sort_keys=True)
    if args.json:
        args.json.write_text(text + "\n")
    logger.info("%s", text)
    return 0 if figures["held"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
