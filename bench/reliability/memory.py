"""Sample the resident memory of the processes a scenario started, and judge its flatness.

A leak in the resolver or proxy shows up only under sustained load, as memory that keeps
growing after warm-up. The sampler reads VmRSS from /proc/<pid>/status of our own children
at a fixed interval; the verdict compares the mean of the last third of the run with the
mean of the first third.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from bench.reliability.processes import Child

FLAT_GROWTH_RATIO = 1.25
FLAT_GROWTH_SLACK_KIB = 16 * 1024


@dataclass
class MemorySeries:
    name: str
    samples: list[tuple[float, int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        values = [kib for _, kib in self.samples]
        if len(values) < 3:
            return {"name": self.name, "samples": len(values), "flat": None}
        third = max(1, len(values) // 3)
        first = sum(values[:third]) / third
        last = sum(values[-third:]) / third
        growth = last / first if first else 0.0
        flat = last <= first * FLAT_GROWTH_RATIO or last - first <= FLAT_GROWTH_SLACK_KIB
        return {
            "name": self.name,
            "samples": len(values),
            "first_third_mib": round(first / 1024, 1),
            "last_third_mib": round(last / 1024, 1),
            "peak_mib": round(max(values) / 1024, 1),
            "growth_ratio": round(growth, 3),
            "flat": flat,
        }


class MemorySampler:
    """A thread that samples each child's RSS every `interval` seconds until stopped."""

    def __init__(self, processes: list[Child], interval: float = 0.5) -> None:
        self.processes = processes
        self.interval = interval
        self.series = {child.name: MemorySeries(child.name) for child in processes}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            for child in self.processes:
                kib = child.rss_kib()
                if kib is not None:
                    self.series[child.name].samples.append((now, kib))
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def summaries(self) -> list[dict[str, Any]]:
        return [series.summary() for series in self.series.values()]
