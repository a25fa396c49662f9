"""Concurrent workers that drive requests through the real proxy and note every outcome.

Both the soak and the crash scenarios need the same thing: many workers on many branches,
each request's status, decision, timing and body hash kept, and transport errors (a dead
proxy) told apart from answers. The load runs in its own thread and event loop so the caller
can kill and restart processes while it goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass, field

import aiohttp

from groundhog.protocol import headers as protocol_headers
from groundhog.protocol.problems import MEDIA_TYPE as PROBLEM_MEDIA_TYPE

WRITE_STATUS = 201
READ_STATUS = 200
CONNECTION_BACKOFF_SECONDS = 0.05


@dataclass(frozen=True)
class LoadPlan:
    proxies: list[str]
    upstream_url: str
    tape: str
    branches: list[str]
    workers: int
    seconds: float
    max_requests: int
    keys: int = 24
    write_share: float = 0.08
    seed: int = 0


@dataclass
class Outcome:
    worker: int
    proxy: int
    branch: str
    method: str
    path: str
    started: float
    latency: float
    status: int | None = None
    decision: str | None = None
    occurrence: str | None = None
    fingerprint: str | None = None
    body_sha: str | None = None
    problem_type: str | None = None
    problem_detail: str | None = None
    error: str | None = None

    @property
    def expected_status(self) -> int:
        return WRITE_STATUS if self.method == "POST" else READ_STATUS

    @property
    def ok(self) -> bool:
        return self.error is None and self.status == self.expected_status


@dataclass
class LoadResult:
    outcomes: list[Outcome] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0

    @property
    def elapsed(self) -> float:
        return max(self.finished - self.started, 1e-9)


def _choose(rng: random.Random, plan: LoadPlan) -> tuple[str, str]:
    key = rng.randrange(plan.keys)
    roll = rng.random()
    if roll < plan.write_share:
        return "POST", f"/docs/{key}"
    if roll < 0.3:
        return "GET", f"/docs/{key}"
    return "GET", f"/item/{key}"


async def _worker(
    index: int,
    plan: LoadPlan,
    budget: list[int],
    deadline: float,
    result: LoadResult,
    stop: threading.Event,
) -> None:
    rng = random.Random(plan.seed * 1000 + index)
    proxy_index = index % len(plan.proxies)
    branch = plan.branches[index % len(plan.branches)]
    headers = {protocol_headers.TAPE: plan.tape, protocol_headers.BRANCH: branch}
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(trust_env=False, timeout=timeout) as session:
        while time.monotonic() < deadline and budget[0] > 0 and not stop.is_set():
            budget[0] -= 1
            method, path = _choose(rng, plan)
            outcome = Outcome(index, proxy_index, branch, method, path, time.time(), 0.0)
            began = time.perf_counter()
            try:
                async with session.request(
                    method,
                    plan.upstream_url + path,
                    proxy=plan.proxies[proxy_index] or None,
                    headers=headers,
                    data=b'{"text": "draft"}' if method == "POST" else None,
                ) as response:
                    body = await response.read()
                    outcome.status = response.status
                    outcome.decision = response.headers.get(protocol_headers.DECISION)
                    outcome.occurrence = response.headers.get(protocol_headers.OCCURRENCE)
                    outcome.fingerprint = response.headers.get(protocol_headers.FINGERPRINT)
                    outcome.body_sha = hashlib.sha256(body).hexdigest()
                    if PROBLEM_MEDIA_TYPE in response.headers.get("Content-Type", ""):
                        outcome.problem_type, outcome.problem_detail = _problem(body)
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                outcome.error = f"{type(error).__name__}: {error}"
            outcome.latency = time.perf_counter() - began
            result.outcomes.append(outcome)
            if outcome.error is not None or outcome.status == 503:
                # A dead proxy or resolver answers at once; pacing the retry, as a real worker
                # would, keeps an outage from turning the load into a busy loop.
                await asyncio.sleep(CONNECTION_BACKOFF_SECONDS)


def _problem(body: bytes) -> tuple[str | None, str | None]:
    try:
        document = json.loads(body)
    except ValueError:
        return None, None
    if not isinstance(document, dict):
        return None, None
    return document.get("type"), str(document.get("detail", ""))[:300]


async def drive(
    plan: LoadPlan, stop: threading.Event | None = None, result: LoadResult | None = None
) -> LoadResult:
    """Run the plan's workers until its deadline, its request budget, or `stop`."""
    result = result or LoadResult()
    result.started = time.time()
    stop = stop or threading.Event()
    deadline = time.monotonic() + plan.seconds
    budget = [plan.max_requests]
    await asyncio.gather(
        *(_worker(index, plan, budget, deadline, result, stop) for index in range(plan.workers))
    )
    result.finished = time.time()
    return result


class BackgroundLoad:
    """`drive(plan)` in a thread of its own; `join()` stops it and returns the result."""

    def __init__(self, plan: LoadPlan) -> None:
        self.plan = plan
        self.result = LoadResult()
        self.error: BaseException | None = None
        self.stop_event = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reliability-load", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(drive(self.plan, self.stop_event, self.result))
        except BaseException as error:  # handed to the caller by join()
            self.error = error

    def start(self) -> BackgroundLoad:
        self._thread.start()
        return self

    def outcomes(self) -> list[Outcome]:
        """A snapshot of the outcomes so far (the list only grows)."""
        return list(self.result.outcomes)

    def join(self) -> LoadResult:
        self.stop_event.set()
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]
