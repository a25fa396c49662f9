"""Prometheus metrics for one resolver app (its own registry, so several apps can coexist).

Operators need to see decisions, live calls, single-flight waits, resolve latency and tape sizes
without reading the database; without a per-app registry a second app in one process (tests)
would fail on duplicate metric names.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from engine.policy import LIVE_DECISIONS, Decision
from resolver.signals import summary


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter(
            "groundhog_decisions", "Resolve decisions by type", ["decision"], registry=self.registry
        )
        # Every resolve counts its decision: `labels()` (its lock, its key) once per decision,
        # not once per resolve.
        self._decision_counters: dict[Decision, Counter] = {}
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
        self.upstream_failed = Counter(
            "groundhog_upstream_failed",
            "Live calls that failed before the world answered (not recorded)",
            registry=self.registry,
        )
        self.waiting = Gauge(
            "groundhog_waiting",
            "Asks long-polling /v1/wait on this replica now",
            registry=self.registry,
        )
        self.wait_wakeups = Counter(
            "groundhog_wait_wakeups",
            "Why a waiter looked at the store again: woken by a record (event) or by its timer",
            ["by"],
            registry=self.registry,
        )
        self.wait_first_looks = Counter(
            "groundhog_wait_first_looks",
            "A /v1/wait's first look at the store: taken, or skipped because nothing settled "
            "since its resolve looked",
            ["look"],
            registry=self.registry,
        )
        self.listener_up = Gauge(
            "groundhog_notify_listener_up",
            "1 while this replica LISTENs for other replicas' records (PostgreSQL)",
            registry=self.registry,
        )
        self.resolve_seconds = Histogram(
            "groundhog_resolve_seconds",
            "Time to answer /v1/resolve, waiting included",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60),
            registry=self.registry,
        )
        self.lease_calls = Counter(
            "groundhog_lease_calls",
            "Lease holders' calls (proxy/held_branches.py): "
            "take, ahead, events (a shipped batch), renew",
            ["call"],
            registry=self.registry,
        )
        self.tape_exchanges = Gauge(
            "groundhog_tape_exchanges",
            "Exchanges recorded on a tape",
            ["tape"],
            registry=self.registry,
        )

        # Per-fork signals, summarised over every fork the store holds: one series per statistic,
        # never one per tape or branch (their names are unbounded).
        self.forks = Gauge(
            "groundhog_forks", "Forks (parents with children)", registry=self.registry
        )
        self.fork_share_rate = Gauge(
            "groundhog_fork_share_rate",
            "Reads served shared / reads, over a fork's children (min, mean, max over forks)",
            ["stat"],
            registry=self.registry,
        )
        self.fork_refetch_rate = Gauge(
            "groundhog_fork_refetch_rate",
            "Reads refetched / reads, over a fork's children (min, mean, max over forks)",
            ["stat"],
            registry=self.registry,
        )
        self.fork_live_calls = Gauge(
            "groundhog_fork_live_calls",
            "Live calls made by a fork's children (min, mean, max over forks)",
            ["stat"],
            registry=self.registry,
        )

    def set_fork_signals(self, forks: list[dict[str, float]]) -> None:
        self.forks.set(len(forks))
        for gauge, field in (
            (self.fork_share_rate, "share_rate"),
            (self.fork_refetch_rate, "refetch_rate"),
            (self.fork_live_calls, "live_calls"),
        ):
            for stat, value in summary(fork[field] for fork in forks).items():
                gauge.labels(stat=stat).set(value)

    def observe(self, decision: Decision, seconds: float) -> None:
        counter = self._decision_counters.get(decision)
        if counter is None:
            counter = self._decision_counters[decision] = self.decisions.labels(
                decision=str(decision)
            )
        counter.inc()
        if decision in LIVE_DECISIONS:
            self.live_calls.inc()
        self.resolve_seconds.observe(seconds)
