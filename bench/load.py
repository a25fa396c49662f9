"""Timing a load, and conditions taking turns: what every speed row is measured with.

A speed row is a ratio against a baseline measured in the same run (`bench.resolver_perf`,
`bench.proxy_perf`). On a shared machine the load changes from one second to the next, so a
baseline measured a minute before the condition it judges can be twice as slow or fast: the
conditions take turns slice by slice (`take_turns`), in the same order each slice, and each
condition's latencies and seconds are summed over its slices before they are summarised. Without
one implementation here each script kept its own loop and its own percentiles, and a row of one
could not be read against a row of the other.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

SLICES = 5  # turns each condition takes with its baseline
# One slice of one condition: its index to the latencies it took and the seconds it all took.
SliceRun = Callable[[int], Awaitable[tuple[list[float], float]]]


def summary(latencies: Sequence[float], elapsed: float) -> dict[str, float]:
    """Requests, p50/p90/p99 in ms and throughput per second.

    p90 is the exclusive-method decile; p99 the nearest rank, never past the largest latency (an
    interpolated 99th percentile of a few hundred samples would be). Needs at least two
    latencies (a percentile of one is not a measurement).
    """
    ordered = sorted(latencies)
    deciles = statistics.quantiles(ordered, n=10)
    return {
        "requests": len(ordered),
        "p50_ms": statistics.median(ordered) * 1000,
        "p90_ms": deciles[-1] * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000,
        "throughput_rps": len(ordered) / elapsed,
    }


def slice_of[Item](items: Sequence[Item], index: int, slices: int) -> Sequence[Item]:
    """The `index`th of `slices` near-equal consecutive parts of `items`."""
    return items[len(items) * index // slices : len(items) * (index + 1) // slices]


async def take_turns(
    conditions: Mapping[str, SliceRun], slices: int = SLICES
) -> dict[str, tuple[list[float], float]]:
    """Each condition runs its slice 0, in the order given, then each its slice 1, and so on
    (a later condition may depend on an earlier one: a hit asks what a record recorded); each
    condition's latencies and seconds over all its slices."""
    latencies: dict[str, list[float]] = {name: [] for name in conditions}
    elapsed = dict.fromkeys(conditions, 0.0)
    for index in range(slices):
        for name, run in conditions.items():
            taken, seconds = await run(index)
            latencies[name] += taken
            elapsed[name] += seconds
    return {name: (latencies[name], elapsed[name]) for name in conditions}


async def timed[Asker](
    ask: Callable[[Asker, str], Awaitable[None]],
    askers: Sequence[Asker],
    url_lists: Sequence[Sequence[str]],
) -> tuple[list[float], float]:
    """Asker i asks url_lists[i] one at a time, all askers at once: every ask's latency, and
    the seconds it all took."""
    latencies: list[float] = []

    async def one(asker: Asker, sequence: Sequence[str]) -> None:
        for url in sequence:
            started = time.perf_counter()
            await ask(asker, url)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one(a, s) for a, s in zip(askers, url_lists, strict=True)))
    return latencies, time.perf_counter() - started


async def timed_concurrently[Asker](
    ask: Callable[[Asker, str], Awaitable[None]],
    askers: Sequence[Asker],
    url_lists: Sequence[Sequence[str]],
) -> dict[str, float]:
    """`timed`, summarised."""
    return summary(*await timed(ask, askers, url_lists))
