"""Crash scenario: `kill -9` the resolver mid-load and restart it on the same store, then
`kill -9` one of two proxies; nothing acknowledged may be lost and nothing may go live silently.

Timeline (each step waits for progress, not for a fixed time): load through two proxies (via
the ledger tap) until some answers are shared; kill the resolver; let workers see the outage;
restart it on the same port and store; wait for recovery; kill proxy 0; wait for proxy 1's
workers to keep going; stop. Then audit the store against the ledger and the world's call log.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.harness import wait_until
from bench.reliability.audit import audit
from bench.reliability.load import BackgroundLoad, LoadPlan, Outcome
from bench.reliability.processes import scenario_children
from bench.reliability.stack import start_stack
from bench.reliability.tap import read_ledger

RESOLVER_UNAVAILABLE = "https://groundhog.dev/problems/resolver-unavailable"
CLAIM_SECONDS = "3"


def _count(load: BackgroundLoad, predicate: Any) -> int:
    return sum(1 for outcome in load.outcomes() if predicate(outcome))


def run_crash(
    root: Path | None = None, *, workers: int = 16, branches: int = 8, quick: bool = True
) -> dict[str, Any]:
    scale = 1 if quick else 4
    with scenario_children("gh-crash-", root) as (base, group):
        stack = start_stack(
            group,
            base,
            proxies=2,
            with_tap=True,
            resolver_env={"GROUNDHOG_CLAIM_SECONDS": CLAIM_SECONDS},
        )
        tape, branch_paths = stack.open_tape("crash", branches)
        plan = LoadPlan(
            proxies=[proxy.url for proxy in stack.proxies],
            upstream_url=stack.upstream.url,
            tape=tape,
            branches=branch_paths,
            workers=workers,
            seconds=300,
            max_requests=10**9,
        )
        load = BackgroundLoad(plan).start()
        timeline: dict[str, float] = {}
        try:
            wait_until(
                lambda: _count(load, lambda o: o.decision == "shared") >= 40 * scale,
                timeout=90,
                what="shared answers before the crash",
            )
            timeline["resolver_killed"] = time.time()
            stack.resolver.kill_hard()
            killed = timeline["resolver_killed"]
            wait_until(
                lambda: (
                    _count(load, lambda o: o.started > killed and o.status == 503) >= 10 * scale
                ),
                timeout=60,
                what="workers to see the outage",
            )
            timeline["resolver_restarting"] = time.time()
            stack.resolver.start()
            timeline["resolver_ready"] = time.time()
            ready = timeline["resolver_ready"]
            wait_until(
                lambda: _count(load, lambda o: o.started > ready and o.ok) >= 60 * scale,
                timeout=90,
                what="recovery after the restart",
            )
            timeline["proxy0_killed"] = time.time()
            stack.proxies[0].kill_hard()
            proxy_killed = timeline["proxy0_killed"]
            wait_until(
                lambda: (
                    _count(load, lambda o: o.started > proxy_killed and o.proxy == 1 and o.ok)
                    >= 40 * scale
                ),
                timeout=90,
                what="proxy 1's workers after proxy 0 died",
            )
        finally:
            result = load.join()
            timeline["load_stopped"] = time.time()
        ledger = read_ledger(stack.ledger_path)
        upstream_log = stack.upstream_log()
        findings = audit(stack.store_path, tape, ledger)
        return _judge(result.outcomes, ledger, upstream_log, timeline, findings.as_dict())


def _judge(
    outcomes: list[Outcome],
    ledger: list[dict[str, Any]],
    upstream_log: list[list[Any]],
    timeline: dict[str, float],
    store: dict[str, Any],
) -> dict[str, Any]:
    killed, outage_end = timeline["resolver_killed"], timeline["resolver_ready"]
    proxy_killed = timeline["proxy0_killed"]
    during = [o for o in outcomes if killed < o.started and o.started + o.latency < outage_end]
    outage_503 = sum(
        1 for o in during if o.status == 503 and o.problem_type == RESOLVER_UNAVAILABLE
    )
    # The restarted resolver serves a little before our health poll sees it: an answer that
    # carries a decision came from a resolver that was up, not from a silent live call.
    restarted = [o for o in during if o.decision is not None]
    outage_other = [
        o for o in during if o.decision is None and o.problem_type != RESOLVER_UNAVAILABLE
    ]
    forwards = [e for e in ledger if e["route"] == "resolve" and e["action"] == "forward"]
    # A world call during the outage is legitimate only for a forward still in flight at the
    # kill (granted, not yet recorded) or granted by the restarted resolver in the window.
    recorded_before_kill = {
        e["ticket"] for e in ledger if e["route"] == "record" and e["t"] < killed
    }
    in_flight = sum(
        1 for e in forwards if e["t"] < killed and e["ticket"] not in recorded_before_kill
    )
    granted_in_window = sum(1 for e in forwards if killed <= e["t"] < outage_end)
    arrivals_during = sum(1 for t, _m, _p in upstream_log if killed < t < outage_end)
    dead_proxy = [o for o in outcomes if o.proxy == 0 and o.started > proxy_killed]
    world_calls = len(upstream_log)
    acknowledged_before_kill = sum(
        1
        for e in ledger
        if e["route"] == "record" and e["kind"] != "passthrough" and e["t"] < killed
    )
    return {
        "requests": len(outcomes),
        "ok": sum(1 for o in outcomes if o.ok),
        "statuses": dict(Counter(str(o.status) for o in outcomes)),
        "timeline_seconds": {
            name: round(value - timeline["resolver_killed"], 2) for name, value in timeline.items()
        },
        "resolver_outage": {
            "requests_during": len(during),
            "answered_503_resolver_unavailable": outage_503,
            "answered_otherwise": len(outage_other),
            "other_examples": [(o.status, o.error, o.decision) for o in outage_other[:5]],
            "world_calls_during": arrivals_during,
            "answered_by_restarted_resolver": len(restarted),
            "forwards_in_flight_at_kill": in_flight,
            "forwards_granted_by_restarted_resolver": granted_in_window,
            "world_calls_allowed_during": in_flight + granted_in_window,
            "recovered_ok_after_restart": sum(
                1 for o in outcomes if o.started > timeline["resolver_ready"] and o.ok
            ),
        },
        "proxy_crash": {
            "requests_to_dead_proxy": len(dead_proxy),
            "connection_errors": sum(1 for o in dead_proxy if o.error is not None),
            "answered_by_dead_proxy": sum(1 for o in dead_proxy if o.error is None),
            "survivor_ok_after": sum(
                1 for o in outcomes if o.proxy == 1 and o.started > proxy_killed and o.ok
            ),
        },
        "world_calls": world_calls,
        "forwards_granted": len(forwards),
        "records_acknowledged_before_kill": acknowledged_before_kill,
        "silent_live_calls": max(0, world_calls - len(forwards)),
        "store": store,
    }


def crash_held(figures: dict[str, Any]) -> bool:
    outage, proxy = figures["resolver_outage"], figures["proxy_crash"]
    return (
        figures["store"]["clean"]
        and figures["silent_live_calls"] == 0
        and outage["answered_503_resolver_unavailable"] > 0
        and outage["answered_otherwise"] == 0
        and outage["world_calls_during"] <= outage["world_calls_allowed_during"]
        and outage["recovered_ok_after_restart"] > 0
        and proxy["connection_errors"] > 0
        and proxy["answered_by_dead_proxy"] == 0
        and proxy["survivor_ok_after"] > 0
    )
