"""How fast the worker-side CLI answers, against the cost of a Python process that imports httpx.

`groundhog tape ls` and `tape fork` are what a training script shells out to between steps; a
CLI that imports the services' stack (mitmproxy, FastAPI, SQLAlchemy, pydantic) for them costs
seconds per group. Every command needs Python and httpx, so the yardstick is a process that
imports httpx and exits: the ratio says what the CLI adds, on whatever machine runs it.

    python -m bench.cli_speed                      # starts a resolver on a free port
    python -m bench.cli_speed --runs 15 --resolver-url http://127.0.0.1:8070

Each command and the yardstick run in turn (A B A B …) and the ratio is taken pair by pair, so a
machine whose speed drifts during the run moves both halves of a pair alike. It prints JSON:
each command's median wall seconds, the yardstick's, and the median of the pairwise ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness import start_child
from bench.proxy_stack import child_processes, resolver_arguments
from groundhog.lifetime import tied_command

YARDSTICK = [sys.executable, "-c", "import httpx"]


def groundhog_command(*args: str) -> list[str]:
    """`groundhog ARGS` as a user runs it: the console script beside this Python."""
    script = Path(sys.executable).with_name("groundhog")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "groundhog.cli", *args]


def timed(command: Sequence[str], env: dict[str, str]) -> float:
    """Wall seconds of one whole process, start-up included; a failing command is an error."""
    start = time.perf_counter()
    done = subprocess.run(tied_command(list(command)), env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed


def paired(
    run: Callable[[Sequence[str]], float], command: Sequence[str], runs: int
) -> dict[str, float]:
    """`command` and the yardstick in turn, `runs` pairs after one warm-up pair."""
    run(command), run(YARDSTICK)
    seconds: list[float] = []
    yardstick: list[float] = []
    for _ in range(runs):
        seconds.append(run(command))
        yardstick.append(run(YARDSTICK))
    return summarise(seconds, yardstick)


def summarise(seconds: Sequence[float], yardstick: Sequence[float]) -> dict[str, float]:
    ratios = [mine / theirs for mine, theirs in zip(seconds, yardstick, strict=True)]
    return {
        "median_seconds": statistics.median(seconds),
        "yardstick_median_seconds": statistics.median(yardstick),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "runs": len(ratios),
    }


def measure(resolver_url: str, runs: int) -> dict[str, Any]:
    env = {**os.environ, "GROUNDHOG_RESOLVER_URL": resolver_url}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    tape = f"cli-speed-{uuid.uuid4().hex[:8]}"
    timed(groundhog_command("tape", "open", tape, "--seed", "1"), env)

    def run(command: Sequence[str]) -> float:
        return timed(command, env)

    commands = {
        "tape ls": groundhog_command("tape", "ls"),
        "tape fork": groundhog_command("tape", "fork", tape, "--children", "2"),
    }
    return {
        "yardstick": " ".join(YARDSTICK[1:]),
        "commands": {label: paired(run, command, runs) for label, command in commands.items()},
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_speed", description=__doc__)
    parser.add_argument("--runs", type=int, default=9, help="pairs per command (default 9)")
    parser.add_argument("--resolver-url", help="a running resolver (default: start one)")
    args = parser.parse_args(argv)
    if args.resolver_url:
        result = measure(args.resolver_url, args.runs)
    else:
        with tempfile.TemporaryDirectory(prefix="cli-speed-") as work, child_processes() as kids:
            resolver = start_child(
                "resolver",
                resolver_arguments(Path(work), None),
                health="http",
                log_dir=Path(work),
            )
            kids.append(resolver)
            result = measure(resolver.url, args.runs)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
