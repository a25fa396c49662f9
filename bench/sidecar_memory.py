"""The sidecar's memory: its RSS at rest against plain mitmdump's, and after many hits (issue 54).

Every rollout worker carries a sidecar, so its resident memory is paid once per worker. Issue
54 asks for the sidecar as deployed (`python -m proxy`, branch leases on) at rest within 1.3x
of a plain `mitmdump`'s, both measured in the same run, and for its RSS after 100k hits
reported beside it (its answer cache is bounded at 64 MiB in memory, proxy/held_branches.py).
This script starts the fixed upstream, the resolver, a sidecar and a plain mitmdump, reads both
proxies' RSS from /proc once they answer (at rest: nothing asked yet), records `--addresses`
addresses through the sidecar on one branch, then has fresh sibling branches ask them all,
`--clients` at a time, until `--hits` hits were served, and reads the sidecar's RSS again.

    python -m bench.sidecar_memory [--hits 100000] [--addresses 1000] [--clients 8] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.proxy_load import load, proxy_with_identity, urls_for
from bench.proxy_stack import (
    child_processes,
    open_tape,
    start_mitmdump,
    start_proxy,
    start_upstream_and_resolver,
)
from bench.reliability.processes import rss_kib

logger = logging.getLogger("bench.sidecar_memory")

GOAL_AT_REST = 1.3  # the sidecar's RSS at rest over plain mitmdump's (issue 54)


def rss_mib(pid: int) -> float:
    """`pid`'s resident set in MiB; a process that is gone is an error, not a zero."""
    kib = rss_kib(pid)
    if kib is None:
        raise RuntimeError(f"process {pid} has exited: no RSS to read")
    return kib / 1024


def run(hits: int, addresses: int, clients: int) -> dict[str, Any]:
    batches = math.ceil(hits / (addresses * clients))
    with (
        tempfile.TemporaryDirectory(prefix="gh-sidecar-memory-") as temporary,
        child_processes() as kids,
    ):
        work = Path(temporary)
        upstream, resolver = start_upstream_and_resolver(work, None, kids)
        sidecar = start_proxy("sidecar", resolver.url, work)  # as deployed: leases on
        kids.append(sidecar)
        plain = start_mitmdump("mitmdump", [], work)
        kids.append(plain)
        at_rest = {"sidecar": rss_mib(sidecar.process.pid), "mitmdump": rss_mib(plain.process.pid)}
        tape = f"memory-{time.time_ns()}"
        branches = open_tape(resolver.url, tape, 1 + batches * clients)
        recorder, siblings = branches[0], branches[1:]
        (addressed,) = urls_for(upstream.url, 1, addresses, "memory")
        asyncio.run(load([proxy_with_identity(sidecar.port, tape, recorder)], [addressed]))
        after_recording = rss_mib(sidecar.process.pid)
        served = 0
        started = time.perf_counter()
        for batch in range(batches):
            lanes = siblings[batch * clients : (batch + 1) * clients]
            proxies = [proxy_with_identity(sidecar.port, tape, branch) for branch in lanes]
            asyncio.run(load(proxies, [addressed] * clients))
            served += clients * addresses
            logger.info(
                "%d hits served, sidecar RSS %.1f MiB", served, rss_mib(sidecar.process.pid)
            )
        seconds = time.perf_counter() - started
        after_hits = rss_mib(sidecar.process.pid)
    return {
        "at_rest_mib": at_rest,
        "at_rest_ratio": at_rest["sidecar"] / at_rest["mitmdump"],
        "goal_at_rest": GOAL_AT_REST,
        "after_recording_mib": after_recording,
        "hits": served,
        "after_hits_mib": after_hits,
        "hits_per_second": served / seconds,
        "addresses": addresses,
        "clients": clients,
    }


def table(result: dict[str, Any]) -> str:
    rest = result["at_rest_mib"]
    met = "met" if result["at_rest_ratio"] <= result["goal_at_rest"] else "not met"
    return "\n".join(
        [
            "| process | RSS MiB |",
            "|---|---:|",
            f"| mitmdump (no addon), at rest | {rest['mitmdump']:.1f} |",
            f"| sidecar (python -m proxy, leases on), at rest | {rest['sidecar']:.1f} |",
            f"| sidecar after recording {result['addresses']} addresses "
            f"| {result['after_recording_mib']:.1f} |",
            f"| sidecar after {result['hits']} hits ({result['clients']} clients, "
            f"{result['hits_per_second']:.0f}/s) | {result['after_hits_mib']:.1f} |",
            "",
            f"At rest the sidecar is {result['at_rest_ratio']:.2f}x mitmdump's RSS "
            f"(goal {result['goal_at_rest']}x: {met}).",
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sidecar_memory", description=__doc__)
    parser.add_argument("--hits", type=int, default=100_000)
    parser.add_argument("--addresses", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if min(args.hits, args.addresses, args.clients) < 1:
        parser.error("--hits, --addresses and --clients must be 1 or more")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    result = run(args.hits, args.addresses, args.clients)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    sys.stdout.write(table(result) + "\n")


if __name__ == "__main__":
    main()
