"""Prometheus metrics for one resolver app (its own registry, so several apps can coexist).

Operators need to see decisions, live calls, single-flight waits, resolve latency and tape sizes
without reading the database; without a per-app registry a second app in one process (tests)
would fail on duplicate metric names.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from resolver.policy import LIVE_DECISIONS, Decision


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter(
            "groundhog_decisions", "Resolve decisions by type", ["decision"], registry=self.registry
        )
        self.live_calls = Counter(
            "groundhog_live_calls", "Asks the resolver sent upstream", registry=self.registry
        )
        self.single_flight_waits = Counter(
            "groundhog_single_flight_waits",
            "Asks that waited for another asker fetching the same address",
            registry=self.registry,
        )
        self.tunnels = Counter(
            "groundhog_tunnels",
            "Raw tunnels (neither HTTP nor TLS) the proxy asked about, by decision",
            ["decision"],
            registry=self.registry,
        )
        self.resolve_seconds = Histogram(
            "groundhog_resolve_seconds",
            "Time to answer /v1/resolve, waiting included",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60),
            registry=self.registry,
        )
        self.tape_exchanges = Gauge(
            "groundhog_tape_exchanges",
            "Exchanges recorded on a tape",
            ["tape"],
            registry=self.registry,
        )

    def observe(self, decision: Decision, seconds: float) -> None:
        self.decisions.labels(decision=str(decision)).inc()
        if decision in LIVE_DECISIONS:
            self.live_calls.inc()
        self.resolve_seconds.observe(seconds)
