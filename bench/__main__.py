"""`python -m bench [--quick] [--out DIR]`: the benchmark through the real proxy.

Starts worldsim, the resolver and the proxy as child processes on free loopback ports (or uses
running ones with --world-url/--resolver-url/--proxy-url, as under docker-compose), runs the
three conditions and every other row, and writes benchmark.json, benchmark.md and the figures.
`groundhog bench` calls this.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from bench import config as bench_config
from bench import noise_curve, report
from bench.harness import ServiceError, connected_services, started_services
from bench.run import run_benchmark

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: mechanisms and directions, not results"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write results")
    parser.add_argument("--world-url", help="a running cooperative worldsim (skip starting one)")
    parser.add_argument(
        "--uncooperative-world-url", help="a running worldsim started with --uncooperative"
    )
    parser.add_argument("--shop-world-url", help="a running worldsim --world shop")
    parser.add_argument(
        "--shop-uncooperative-world-url", help="a running worldsim --world shop --uncooperative"
    )
    parser.add_argument(
        "--mcp-world-url", help="a running MCP world (python -m worldsim --world mcp)"
    )
    parser.add_argument(
        "--worlds-run",
        default=None,
        help="comma-separated worlds to run: research, shop, mcp (default: all three; --quick: "
        "research; without shop URLs under --world-url, research only)",
    )
    parser.add_argument("--resolver-url", help="a running resolver")
    parser.add_argument(
        "--proxy-url", help="a running proxy, or several comma-separated (used in turn)"
    )
    parser.add_argument("--worlds", type=int, help="worlds per condition (overrides the mode)")
    parser.add_argument("--workers", type=int, help="groups run concurrently")
    parser.add_argument(
        "--speed",
        action="store_true",
        help="also run the speed rows (resolver_perf, proxy_perf); a full run has them already",
    )
    parser.add_argument("--no-speed", action="store_true", help="leave the speed rows out")
    parser.add_argument(
        "--noise-curve",
        action="store_true",
        help="also sweep the research world's per-call noise weight (bench/noise_curve.py); "
        "a full run sweeps the protocol's weights already",
    )
    parser.add_argument(
        "--noise-curve-worlds", type=int, help="worlds per condition at each sweep point"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--log-level", default="warning")
    return parser.parse_args(argv)


def build_config(args: argparse.Namespace) -> bench_config.BenchConfig:
    config = bench_config.quick_config() if args.quick else bench_config.full_config()
    overrides = {}
    if args.worlds is not None:
        if args.worlds < 8:
            raise SystemExit("--worlds must be at least 8 (Levene and the t-tests need data)")
        overrides["worlds"] = args.worlds
        # Sizes not from the protocol: the run's verdicts are not published (bench/claims.py).
        overrides["extra"] = {"sizes_overridden": True}
    if args.workers is not None:
        overrides["workers"] = max(1, args.workers)
    if args.speed or args.no_speed:
        overrides["measure_speed"] = bool(args.speed) and not args.no_speed
    if args.noise_curve and not config.noise_curve:
        overrides["noise_curve"] = noise_curve.WEIGHTS
    if args.noise_curve_worlds is not None:
        if args.noise_curve_worlds < 3:
            raise SystemExit("--noise-curve-worlds must be at least 3 (a variance needs data)")
        overrides["noise_curve_worlds"] = args.noise_curve_worlds
    if args.worlds_run:
        chosen = tuple(name.strip() for name in args.worlds_run.split(",") if name.strip())
        unknown = sorted(set(chosen) - set(bench_config.WORLDS))
        if unknown or not chosen:
            raise SystemExit(f"--worlds-run: choose from {', '.join(bench_config.WORLDS)}")
        overrides["worlds_run"] = chosen
    elif args.world_url and not args.shop_world_url:
        overrides["worlds_run"] = ("research",)
    elif args.world_url and not args.mcp_world_url and "mcp" in config.worlds_run:
        overrides["worlds_run"] = tuple(name for name in config.worlds_run if name != "mcp")
    return replace(config, **overrides) if overrides else config


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    # One line per HTTP request would bury the benchmark's own messages.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    config = build_config(args)
    urls = (args.world_url, args.resolver_url, args.proxy_url)
    console = Console(stderr=True)
    if any(urls) and not all(urls):
        console.print("give all three of --world-url, --resolver-url and --proxy-url, or none")
        return 2
    try:
        services = (
            connected_services(
                *urls,
                uncooperative_world_url=args.uncooperative_world_url,
                shop_world_url=args.shop_world_url,
                shop_uncooperative_world_url=args.shop_uncooperative_world_url,
                mcp_world_url=args.mcp_world_url,
            )
            if all(urls)
            else started_services(cells=bench_config.cells(config))
        )
        with services as running:
            results = run_benchmark(config, running, args.out, show_progress=not args.no_progress)
    except ServiceError as error:
        console.print(f"[red]benchmark could not start its services:[/red] {error}")
        return 1
    sys.stdout.write(report.render_markdown(report.clean(results)))
    console.print(f"wrote {args.out / 'benchmark.json'}, benchmark.md and figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
