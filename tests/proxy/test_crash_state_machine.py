"""Crash injection through the real proxy (issue 29): a hypothesis state machine drives branches
through a real `python -m proxy` and a real resolver against a local upstream, while the
resolver dies at random failpoints (engine/failpoints.py) and the proxy is SIGKILLed while a
live read is in flight; both are restarted on their ports as a supervisor would, and the worker
retries what went unanswered, as workers do.

tests/resolver/test_crash_injection.py plays the proxy itself; this one uses the proxy that users
run, so its retries, its attempt ids (proxy/attempts.py) and its death are part of what is
checked. The upstream answers every call with new bytes, so equal bytes can only come from the
tape. Invariants, checked after every read served:

- same address (path, occurrence, fingerprint), same bytes, across every restart;
- a read after its branch's write reached the world, recorded or not, is never served the base;
- a read's occurrence is the number of reads of its path its lineage was answered before:
  neither a resolver killed at any transition nor a proxy killed mid-call advances it;
- at most one upstream call per address per attempt: the world saw no more calls of a path
  than the reads served from a live call plus the tries that went unanswered.

With branch leases on (the `leases` parameter) the proxy answers hits itself and ships them; the
lease failpoints (a grant, a shipped batch before and after its commit) are armed like the rest,
and the proxy's own (engine/failpoints.PROXY_NAMES: a served hit logged but not sent, a batch
sent but not marked, a fork's flush) kill it, while a supervisor restarts whatever died at once,
a fork's flush included. A hit logged when the proxy died is the one documented exception to
the occurrence rule (docs/internals.md, "Branch leases"): the proxy cannot tell it from one the
worker had, so it counts, and the worker's retry is one occurrence on; the model expects exactly
that, and every other invariant as before.

`GROUNDHOG_CRASH_EXAMPLES` sets the number of examples (a few in CI; more for a long run).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
import requests
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from engine.failpoints import NAMES, PROXY_NAMES
from tests.proxy.clients import Reply
from tests.proxy.stack import Stack, running_stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream
from tests.support.servers import wait_until

EXAMPLES = int(os.environ.get("GROUNDHOG_CRASH_EXAMPLES", "3"))
READ_PATHS = ("/item/a", "/gated?k=g")
MAX_BRANCHES = 4
TRIES = 4  # a worker's tries of one read; each failed try revives what died
RESOLVER_ENV = {
    "GROUNDHOG_CLAIM_SECONDS": "1.5",  # a dead proxy's claim lapses soon
    "GROUNDHOG_RESOLVE_WAIT_SECONDS": "1",
    "GROUNDHOG_WAIT_POLL_SECONDS": "0.1",
    "GROUNDHOG_BRANCH_LEASE_SECONDS": "1.5",  # a dead proxy's branch leases lapse soon
    # ... but its restart may still ship what it served, however loaded the machine.
    "GROUNDHOG_BRANCH_LEASE_GRACE_SECONDS": "20",
}
# The resolver's next life: no failpoint, or one that kills it on its N-th reach.
SPECS = st.one_of(
    st.just(""),
    st.builds(lambda name, count: f"{name}@{count}", st.sampled_from(NAMES), st.integers(1, 2)),
)
# The proxy's next life (with leases on): no failpoint, or one that kills it on its N-th reach.
PROXY_SPECS = st.one_of(
    st.just(""),
    st.builds(
        lambda name, count: f"{name}@{count}", st.sampled_from(PROXY_NAMES), st.integers(1, 3)
    ),
)
LOGGED = "failpoint proxy.lease.logged reached"
FORK_SECONDS = 120
T = TypeVar("T")
LIVE = {"recorded", "refetched"}
_tapes = itertools.count()


class ProxyCrashMachine(RuleBasedStateMachine):
    stack: Stack  # set by the test before it runs
    upstream: Upstream
    leases: bool

    @initialize(spec=SPECS)
    def open_tape(self, spec: str) -> None:
        self.upstream.state.gate.set()
        self.arm(spec)
        self.tape = self.stack.open_tape(
            name=f"proxy-crash-{next(_tapes)}", dependency_model="closure"
        )
        self.branches = ["root"]
        self.answered: dict[str, dict[str, int]] = {"root": {}}  # branch -> path -> reads
        self.wrote: dict[str, bool] = {"root": False}
        self.bodies: dict[tuple[str, str, str], bytes] = {}  # address -> bytes served
        self.served_live: dict[str, int] = dict.fromkeys(READ_PATHS, 0)
        self.unanswered_tries: dict[str, int] = dict.fromkeys(READ_PATHS, 0)
        self.calls_before = {path: self.calls(path) for path in READ_PATHS}

    # -- the processes -------------------------------------------------------------------

    def calls(self, path: str) -> int:
        return self.upstream.state.count(path.split("?")[0])

    def arm(self, spec: str) -> None:
        """The resolver's next life dies at `spec` (restarted for it: itself a crash)."""
        if spec or self.stack.resolver.env.get("GROUNDHOG_FAILPOINTS"):
            self.stack.crash_resolver()
            self.stack.restart_resolver(env={**RESOLVER_ENV, "GROUNDHOG_FAILPOINTS": spec})

    def revive(self) -> None:
        """Restart whatever died, without a failpoint (the worker must get on)."""
        self.revive_resolver()
        if self.stack.proxy.process.poll() is not None:
            self.stack.restart_proxy()

    def revive_resolver(self) -> None:
        if self.stack.resolver.process.poll() is not None:
            self.stack.restart_resolver(env=dict(RESOLVER_ENV))

    def url(self, path: str) -> str:
        return f"{self.upstream.url}{path}"

    # -- what a worker does ----------------------------------------------------------------

    def try_read(self, branch: str, path: str) -> Reply | None:
        """One try of a GET through the proxy; None when the proxy died under it (a hit it
        logged before dying counts in its lineage: see the module's docstring)."""
        self.revive()  # an armed proxy may have died shipping between steps
        proxy = self.stack.proxy
        try:
            return ask(self.stack, self.tape, branch, self.url(path))
        except requests.RequestException:
            if LOGGED in proxy.log():  # written just before the proxy killed itself
                # The worker can see the reset before the process is gone: wait, so that the
                # next try asks a new proxy (and this hit is counted once).
                wait_until(lambda: proxy.process.poll() is not None, what="the proxy to die")
                self.answered[branch][path] = self.answered[branch].get(path, 0) + 1
            return None

    def read(self, branch: str, path: str) -> None:
        """Ask until answered, reviving what died between tries; then check the answer."""
        for _ in range(TRIES):
            reply = self.try_read(branch, path)
            if reply is not None and reply.status == 200:
                self.served(branch, path, reply)
                return
            assert reply is None or reply.status == 503, (reply.status, reply.body[:300])
            self.unanswered_tries[path] += 1
            if reply is not None:  # a 503: the resolver died under the ask (a failpoint)
                wait_until(
                    lambda: self.stack.resolver.process.poll() is not None,
                    what="the resolver that answered 503 to be dead",
                )
            self.revive()
        raise AssertionError(f"{branch} {path}: no answer in {TRIES} tries")

    def served(self, branch: str, path: str, reply: Reply) -> None:
        occurrence = reply.headers["x-groundhog-occurrence"]
        fingerprint = reply.headers.get("x-groundhog-fingerprint", "")
        address = (path, occurrence, fingerprint)
        assert self.bodies.setdefault(address, reply.body) == reply.body, (
            "same address, different bytes",
            address,
        )
        if self.wrote[branch]:
            assert fingerprint != "", "a read after its own write was served the base"
        expected = self.answered[branch].get(path, 0)
        assert int(occurrence) == expected, (branch, path, occurrence, expected)
        self.answered[branch][path] = expected + 1
        if reply.decision in LIVE:
            self.served_live[path] += 1
        calls = self.calls(path) - self.calls_before[path]
        assert self.served_live[path] <= calls, "a live answer the world never gave"
        assert calls <= self.served_live[path] + self.unanswered_tries[path], (
            "more upstream calls than attempts",
            path,
            calls,
        )

    # -- rules ---------------------------------------------------------------------------

    @rule(index=st.integers(0, MAX_BRANCHES - 1), path=st.sampled_from(READ_PATHS), spec=SPECS)
    def a_read(self, index: int, path: str, spec: str) -> None:
        self.read(self.branches[index % len(self.branches)], path)
        self.arm(spec)

    @precondition(lambda self: self.leases)
    @rule(spec=PROXY_SPECS)
    def the_proxy_is_armed(self, spec: str) -> None:
        """The proxy's next life dies at `spec` (restarted for it: itself a crash)."""
        self.stack.crash_proxy()
        self.revive_resolver()
        self.stack.restart_proxy("--set", f"groundhog_failpoints={spec}")

    @rule(index=st.integers(0, MAX_BRANCHES - 1), spec=SPECS)
    def a_write(self, index: int, spec: str) -> None:
        branch = self.branches[index % len(self.branches)]
        before = self.upstream.state.count("/item/w")
        self.revive()  # an armed proxy may have died shipping between steps
        try:
            reply = ask(self.stack, self.tape, branch, self.url("/item/w"), "POST", b"w")
        except requests.RequestException:  # the proxy died at a failpoint of its own
            reply = None
        assert reply is None or reply.status in (200, 503), (reply.status, reply.body[:300])
        if reply is not None and reply.status == 503:  # the resolver died under the ask
            wait_until(
                lambda: self.stack.resolver.process.poll() is not None,
                what="the resolver that answered 503 to be dead",
            )
        if self.upstream.state.count("/item/w") > before:
            self.wrote[branch] = True  # the world saw it, whatever became of its record
        self.revive()
        self.arm(spec)

    @rule(index=st.integers(0, MAX_BRANCHES - 1))
    def a_fork(self, index: int) -> None:
        if len(self.branches) >= MAX_BRANCHES:
            return
        parent = self.branches[index % len(self.branches)]
        child = self.fork(parent)
        self.branches.append(child)
        self.answered[child] = dict(self.answered[parent])
        self.wrote[child] = self.wrote[parent]

    def fork(self, parent: str) -> str:
        """Fork one child, as a trainer would, asking again if the resolver died under it: with
        leases on, a fork first has the parent's sidecar ship its hits, and the resolver may
        die at a lease failpoint while it applies them (nothing is forked before they are)."""
        for _ in range(TRIES):
            try:
                # A lease granted as the resolver died is unknown to its holder: the fork
                # waits out its lapse and grace (FORK_SECONDS covers both).
                fork = partial(self.stack.fork, self.tape, 1, parent, timeout=FORK_SECONDS)
                (child,) = self.supervised(fork)
                return child
            except httpx.TransportError:
                wait_until(
                    lambda: self.stack.resolver.process.poll() is not None,
                    what="the resolver that dropped the fork to be dead",
                )
                self.revive()
        raise AssertionError(f"no fork of {parent} in {TRIES} tries")

    def supervised(self, call: Callable[[], T]) -> T:
        """`call()`, while a supervisor restarts the proxy if it dies meanwhile (at a failpoint
        in a fork's flush: the fork waits for its restart to ship and release)."""
        self.revive()
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(call)
            while not pending.done():
                wait_until(
                    lambda: pending.done() or self.stack.proxy.process.poll() is not None,
                    timeout=300,
                    what="the admin call to end, or the proxy to die",
                )
                if not pending.done():
                    self.stack.restart_proxy()
            return pending.result()

    @rule(index=st.integers(0, MAX_BRANCHES - 1))
    def the_proxy_dies_mid_read(self, index: int) -> None:
        """The proxy is killed while its live read is in flight: nothing is recorded, the
        claim is left to lapse, and the worker's retry (through a new proxy) reads on."""
        branch = self.branches[index % len(self.branches)]
        path = "/gated?k=g"
        self.revive()
        gate, before = self.upstream.state.gate, self.calls(path)
        gate.clear()
        with ThreadPoolExecutor(1) as pool:
            try:
                pending = pool.submit(self.try_read, branch, path)
                wait_until(
                    lambda: self.calls(path) > before or pending.done(),
                    what="the live read reaching the world",
                )
                if not pending.done():
                    self.stack.crash_proxy()
                    self.unanswered_tries[path] += 1
            finally:
                gate.set()
            answered = pending.result(timeout=120)
        if answered is not None and answered.status == 200:
            self.served(branch, path, answered)  # answered before the kill: a read served
        self.revive()
        self.read(branch, path)


@pytest.mark.parametrize("leases", ["off", "on"])
def test_the_lifecycle_survives_the_resolver_and_the_proxy_dying(
    tmp_path: Path, upstream: Upstream, resolver_args: tuple[str, ...], leases: str
) -> None:
    """With branch leases on too (proxy/held_branches.py): the proxy then answers hits itself
    and its kill can leave served hits in its log only, which its restart ships."""
    lease_flags = ("--set", "groundhog_branch_leases=true") if leases == "on" else ()
    with running_stack(
        tmp_path,
        "--set",
        "groundhog_resolve_retry=0",
        *lease_flags,
        resolver_env=dict(RESOLVER_ENV),
        resolver_args=resolver_args,
    ) as stack:
        ProxyCrashMachine.stack = stack
        ProxyCrashMachine.upstream = upstream
        ProxyCrashMachine.leases = leases == "on"
        machine = ProxyCrashMachine.TestCase
        machine.settings = settings(
            max_examples=EXAMPLES,
            stateful_step_count=10,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=os.environ.get("GROUNDHOG_CRASH_RANDOM") is None,
        )
        machine().runTest()
