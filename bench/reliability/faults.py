"""World faults and a dead single-flight holder, through the real proxy and resolver.

An upstream that answers 5xx is part of the world: the first branch's answer is recorded and
every sibling gets the same bytes without another live call (otherwise the noise of failures
would differ between branches). A failure before any HTTP answer (reset, timeout, refused
connection) is not the world's answer: each asker is served a 502 `upstream-failed`, nothing is
recorded, and the next ask tries again — a proxy misconfiguration must not poison the tape.
A proxy that dies while holding a single-flight claim must not block its siblings forever:
they take over once the claim lapses, and not before.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.harness import free_port, wait_until
from bench.reliability.audit import open_read_only
from bench.reliability.client import Answer, through_proxy
from bench.reliability.processes import scenario_children
from bench.reliability.stack import start_stack

UPSTREAM_TIMEOUT_SECONDS = 1.0
CLAIM_SECONDS = 2.0


def _world_fault_cases(upstream_url: str) -> list[tuple[str, str, int, int]]:
    """(case, url, status each asker gets, world calls the two asks make)."""
    closed = f"http://127.0.0.1:{free_port()}/nothing-listens"
    return [
        ("reset", f"{upstream_url}/reset/a", 502, 2),
        ("timeout", f"{upstream_url}/slow/t?delay=4", 502, 2),
        ("5xx-500", f"{upstream_url}/status/500", 500, 1),
        ("5xx-503", f"{upstream_url}/status/503", 503, 1),
        ("connect-refused", closed, 502, 0),
    ]


def _expected_decisions(status: int) -> list[str]:
    return ["upstream-failed"] * 2 if status == 502 else ["recorded", "shared"]


def run_world_faults(root: Path | None = None) -> dict[str, Any]:
    with scenario_children("gh-faults-", root) as (base, group):
        stack = start_stack(group, base, upstream_timeout=UPSTREAM_TIMEOUT_SECONDS)
        tape, (first, second) = stack.open_tape("world-faults", 2)
        proxy = stack.proxies[0].url
        cases = []
        for name, url, expected, expected_calls in _world_fault_cases(stack.upstream.url):
            before = stack.upstream_stats()["calls"]
            one = through_proxy(proxy, url, tape=tape, branch=first)
            two = through_proxy(proxy, url, tape=tape, branch=second)
            calls = stack.upstream_stats()["calls"] - before
            stored = _stored_bodies(stack.store_path, urlsplit(url).path)
            held = (
                one.status == expected
                and two.status == expected
                and [one.decision, two.decision] == _expected_decisions(expected)
                and (expected == 502 or one.body == two.body)
                and calls == expected_calls
                and len(stored) == (0 if expected == 502 else 1)
                and (expected != 502 or one.is_problem)
            )
            cases.append(
                {
                    "case": name,
                    "status": [one.status, two.status],
                    "decisions": [one.decision, two.decision],
                    "same_bytes": one.body == two.body,
                    "world_calls": calls,
                    "exchanges_stored": len(stored),
                    "problem_detail": _detail(one) if one.is_problem else None,
                    "held": held,
                }
            )
        return {"cases": cases, "held": all(case["held"] for case in cases)}


def _detail(answer: Answer) -> str:
    match = re.search(rb'"detail":\s*"([^"]*)"', answer.body)
    return match.group(1).decode(errors="replace")[:200] if match else ""


def _single_flight_waits(resolver_url: str) -> float:
    text = httpx.get(f"{resolver_url}/metrics", timeout=10, trust_env=False).text
    match = re.search(r"^groundhog_single_flight_waits_total (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def run_claim_takeover(root: Path | None = None) -> dict[str, Any]:
    """Proxy 0 holds the claim (its fetch hangs) and is killed; proxy 1's sibling takes over."""
    with scenario_children("gh-claim-", root) as (base, group):
        stack = start_stack(
            group,
            base,
            proxies=2,
            resolver_env={"GROUNDHOG_CLAIM_SECONDS": str(CLAIM_SECONDS)},
        )
        tape, (first, second) = stack.open_tape("claim", 2)
        path = "/slow-once/held"
        url = f"{stack.upstream.url}{path}?delay=8"
        answers: dict[str, Answer] = {}

        def ask(name: str, proxy_url: str, branch: str) -> None:
            answers[name] = through_proxy(proxy_url, url, tape=tape, branch=branch)

        holder = threading.Thread(target=ask, args=("holder", stack.proxies[0].url, first))
        holder.start()
        wait_until(
            lambda: any(p == path for _t, _m, p in stack.upstream_log()),
            timeout=30,
            what="the holder's live call",
        )
        waits_before = _single_flight_waits(stack.resolver.url)
        waiter_started = time.time()
        waiter = threading.Thread(target=ask, args=("waiter", stack.proxies[1].url, second))
        waiter.start()
        wait_until(
            lambda: _single_flight_waits(stack.resolver.url) > waits_before,
            timeout=30,
            what="the sibling to wait on the claim",
        )
        killed_at = time.time()
        stack.proxies[0].kill_hard()
        waiter.join(timeout=60)
        holder.join(timeout=60)
        waited = time.time() - waiter_started
        arrivals = [t for t, _m, p in stack.upstream_log() if p == path]
        stored = _stored_bodies(stack.store_path, path)
        take_over = answers.get("waiter", Answer(None, error="no answer"))
        held_by_dead = answers.get("holder", Answer(None, error="no answer"))
        gap = arrivals[1] - arrivals[0] if len(arrivals) == 2 else None
        # The holder renews its claim while alive, so a takeover before its death is the bug;
        # measured from the kill, not from its upstream arrival (which load can delay after
        # the claim, making a correct takeover look early).
        after_kill = arrivals[1] - killed_at if len(arrivals) == 2 else None
        return {
            "claim_seconds": CLAIM_SECONDS,
            "holder_error": held_by_dead.error is not None,
            "waiter_status": take_over.status,
            "waiter_decision": take_over.decision,
            "waiter_seconds": round(waited, 2),
            "world_calls": len(arrivals),
            "second_call_after_seconds": round(gap, 2) if gap is not None else None,
            "second_call_after_kill_seconds": (
                round(after_kill, 2) if after_kill is not None else None
            ),
            "exchanges_at_address": len(stored),
            "stored_matches_waiter": stored == [take_over.body],
            "held": (
                held_by_dead.error is not None
                and take_over.status == 200
                and take_over.decision == "recorded"
                and len(arrivals) == 2
                and after_kill is not None
                and after_kill >= 0
                and stored == [take_over.body]
            ),
        }


def _stored_bodies(store: Path, path: str) -> list[bytes]:
    with contextlib.closing(open_read_only(store)) as connection:
        rows = connection.execute(
            "SELECT b.data FROM gh_exchanges e JOIN gh_blobs b ON b.sha256 = e.response_body_sha "
            "WHERE e.request_url LIKE ?",
            (f"%{path}%",),
        ).fetchall()
    return [bytes(row[0]) for row in rows]
