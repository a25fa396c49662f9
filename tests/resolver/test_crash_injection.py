"""Crash injection (issue 29): a hypothesis state machine drives branches through reads, writes,
forks and single-flight waits against a real resolver process whose failpoints
(engine/failpoints.py) kill it at random transitions; it restarts the resolver on the same
store and checks the lifecycle's invariants after every step.

The test plays the proxy over the real internal protocol (as tests/resolver/proxy_double.py
does) and its world draws new noise on every live call, so equal bytes can only come from the
tape. Invariants (docs/internals.md, "The resolve lifecycle"):

- same address, same bytes, for every read served;
- no read after a write of its branch reached the world — recorded or not — is served the base
  (its fingerprint is never empty);
- no live call is handed out for an address whose record was acknowledged;
- nothing acknowledged is lost across a crash;
- a read's occurrence is the number of reads of its key its lineage was answered before
  (occurrences are taken by answers). The worker's side sends an attempt id with each ask and
  the same id again when it re-asks a read it got no answer to, as the proxy does
  (proxy/attempts.py), so a kill between a commit and its answer costs no occurrence either.
  The one exception is a fork taken while its parent has such a read unanswered: the child
  inherits a lineage the lost answer may have advanced, and re-asks with attempts of its own.

`GROUNDHOG_CRASH_EXAMPLES` sets the number of examples (a few in CI; thousands for a long run,
with `--timeout 0`: pytest-timeout's 300 s per test fires mid-example and reads as a hypothesis
`FlakyFailure`; docs/internals.md gives the command).
A failing case shrinks to the shortest sequence of steps hypothesis finds, printed as a script.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from engine.failpoints import NAMES
from tests.support.servers import ServerProcess, free_port, start_server
from tests.support.store_databases import private_schema_url

EXAMPLES = int(os.environ.get("GROUNDHOG_CRASH_EXAMPLES", "4"))
PATHS = ("/a", "/b")
MAX_BRANCHES = 6
ENV = {
    "GROUNDHOG_CLAIM_SECONDS": "1.5",
    "GROUNDHOG_RESOLVE_WAIT_SECONDS": "1",
    "GROUNDHOG_WAIT_POLL_SECONDS": "0.1",
}
# A failpoint armed for the resolver's next life: a name and on which reach it fires, or none.
SPECS = st.builds(lambda name, count: f"{name}@{count}", st.sampled_from(NAMES), st.integers(1, 3))
_tapes = itertools.count()


class Died(Exception):
    """The resolver died under this ask: the worker would have been answered 503."""


@dataclass
class Resolver:
    """The resolver process, restarted on the same port and store with a new failpoint spec."""

    arguments: list[str]
    port: int = field(default_factory=free_port)
    server: ServerProcess | None = None
    armed: str = ""
    crashes: int = 0

    def start(self, spec: str) -> None:
        env = {**ENV, "GROUNDHOG_FAILPOINTS": spec}
        self.server = start_server(
            ["resolver", *self.arguments], port=self.port, env=env, own_group=True
        )
        self.armed = spec

    def alive(self) -> bool:
        return self.server is not None and self.server.process.poll() is None

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


class CrashMachine(RuleBasedStateMachine):
    resolver: Resolver  # set by the test before it runs

    @initialize(spec=SPECS)
    def open_tape(self, spec: str) -> None:
        self.resolver.stop()  # each example arms a failpoint of its own
        self.resolver.start(spec)
        self.http = httpx.Client(base_url=self.resolver.server.url, timeout=30, trust_env=False)  # type: ignore[union-attr]
        self.tape = f"crash-{next(_tapes)}"
        self.admin("POST", "/v1/tapes", json={"name": self.tape, "dependency_model": "closure"})
        self.branches = ["root"]
        # Per branch: allowed occurrences of each read key; whether a write reached the world.
        self.allowed: dict[str, dict[str, set[int]]] = {"root": {}}
        self.wrote: dict[str, bool] = {"root": False}
        self.noise = itertools.count(1)
        self.bodies: dict[tuple[str, int, str], bytes] = {}  # address -> bytes served
        self.acknowledged: dict[int, bytes] = {}  # exchange id -> its body
        self.recorded_addresses: set[tuple[str, int, str]] = set()
        self.keys: dict[str, str] = {}  # path -> its request key
        # (branch, path) -> the attempt of a read that got no answer, and whether its resolver
        # died after a commit (so the lost answer may have advanced the lineage).
        self.unanswered: dict[tuple[str, str], tuple[str, bool]] = {}
        self.committed_attempts: set[str] = set()  # attempts a resolver died after committing

    def teardown(self) -> None:
        if hasattr(self, "http"):
            self.http.close()

    # -- the proxy's side of the protocol, every failure a `Died` -------------------------

    def post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = self.http.post(route, json=body)
        except httpx.TransportError as error:
            self._died(error)
        if reply.status_code >= 500 and not self.resolver.alive():
            self._died(RuntimeError(reply.text))
        assert reply.status_code == 200, (route, reply.status_code, reply.text)
        return reply.json()

    def _died(self, error: Exception) -> Any:
        assert self.resolver.server is not None
        self.resolver.server.process.wait(timeout=30)  # a failpoint killed it, nothing else
        self.resolver.crashes += 1
        raise Died(str(error))

    def admin(self, method: str, route: str, **kwargs: Any) -> dict[str, Any]:
        reply = self.http.request(method, route, **kwargs)
        assert reply.status_code < 300, reply.text
        return reply.json() if reply.content else {}

    def revive(self, spec: str) -> None:
        if self.resolver.alive():
            return
        self.resolver.start(spec)
        for exchange_id, body in self.acknowledged.items():  # nothing acknowledged is lost
            stored = self.admin("GET", f"/v1/tapes/{self.tape}/exchanges/{exchange_id}")
            assert base64.b64decode(stored["response"]["body"]) == body

    def resolve(
        self, branch: str, method: str, path: str, body: bytes = b"", *, attempt: str
    ) -> dict[str, Any]:
        request = {
            "tape": self.tape,
            "branch": branch,
            "method": method,
            "scheme": "https",
            "host": "api.example.com",
            "port": 443,
            "path": path,
            "query": [],
            "headers": [],
            "body": base64.b64encode(body).decode(),
            "attempt": attempt,
        }
        answer = self.post("/v1/resolve", request)
        self.keys[path] = answer["request_key"]  # a key is the same on every branch
        return answer

    def follow(self, answer: dict[str, Any]) -> dict[str, Any]:
        while answer["action"] == "wait":
            answer = self.post("/v1/wait", {"wait": answer["wait"]})
        return answer

    def live(self, branch: str, answer: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """Fetch from the world (fresh noise each call) and record; what the worker is served."""
        address = (answer["request_key"], answer["occurrence"], answer["fingerprint"])
        if answer["decision"] != "write":
            assert address not in self.recorded_addresses, "a live call for a recorded address"
        sent = json.dumps({"branch": branch, "noise": next(self.noise)}).encode()
        if answer["decision"] == "write":
            self.wrote[branch] = True  # the world saw it, whatever becomes of its record
        response = {"status": 200, "headers": [], "body": base64.b64encode(sent).decode()}
        recorded = self.post("/v1/record", {"ticket": answer["ticket"], "response": response})
        served = recorded["response"]["body"]
        body = sent if served is None else base64.b64decode(served)
        if recorded["exchange_id"] is not None and answer["decision"] != "write":
            self.acknowledged[recorded["exchange_id"]] = body
            self.recorded_addresses.add(address)
        return {**answer, "decision": recorded["decision"]}, body

    def served_read(self, branch: str, answer: dict[str, Any], body: bytes) -> None:
        """A read reached the worker: check it against the invariants and the model."""
        address = (answer["request_key"], answer["occurrence"], answer["fingerprint"])
        assert self.bodies.setdefault(address, body) == body, "same address, different bytes"
        if self.wrote[branch]:
            assert answer["fingerprint"] != "", "a read after its own write was served the base"
        allowed = self.allowed[branch].setdefault(answer["request_key"], {0})
        assert answer["occurrence"] in allowed, (branch, answer["occurrence"], allowed)
        self.allowed[branch][answer["request_key"]] = {answer["occurrence"] + 1}

    def attempt_for(self, branch: str, path: str) -> str:
        """The attempt of this read's unanswered try, re-asked as the proxy does; else new."""
        unanswered = self.unanswered.pop((branch, path), None)
        return unanswered[0] if unanswered else secrets.token_urlsafe(12)

    def lost_answer(self, branch: str, path: str, attempt: str) -> None:
        """The worker got 503: its next read of the path is asked as the same attempt. Whether
        a lost answer may have advanced the lineage sticks to the attempt: a re-ask that dies
        before its commit does not undo what an earlier try of it committed."""
        committed = self.resolver.armed.split("@")[0].endswith("committed")
        if committed:
            self.committed_attempts.add(attempt)
        self.unanswered[(branch, path)] = (attempt, attempt in self.committed_attempts)

    def read_once(self, branch: str, path: str) -> None:
        attempt = self.attempt_for(branch, path)
        try:
            answer = self.resolve(branch, "GET", path, attempt=attempt)
        except Died:
            self.lost_answer(branch, path, attempt)
            return
        self.finish_read(branch, path, attempt, answer)

    def finish_read(self, branch: str, path: str, attempt: str, answer: dict[str, Any]) -> None:
        """A resolved read to its end: waited on, fetched and recorded, or served."""
        try:
            answer = self.follow(answer)
            if answer["action"] == "forward":
                answer, body = self.live(branch, answer)
            else:
                body = base64.b64decode(answer["response"]["body"])
        except Died:
            self.lost_answer(branch, path, attempt)
            return
        self.served_read(branch, answer, body)

    # -- rules --------------------------------------------------------------------------

    @rule(index=st.integers(0, MAX_BRANCHES - 1), path=st.sampled_from(PATHS), spec=SPECS)
    def read(self, index: int, path: str, spec: str) -> None:
        self.read_once(self.branches[index % len(self.branches)], path)
        self.revive(spec)

    @rule(index=st.integers(0, MAX_BRANCHES - 1), spec=SPECS)
    def write(self, index: int, spec: str) -> None:
        branch = self.branches[index % len(self.branches)]
        try:
            answer = self.resolve(branch, "POST", "/w", b"w", attempt=secrets.token_urlsafe(12))
            assert answer["action"] == "forward" and answer["decision"] == "write"
            self.live(branch, answer)
        except Died:
            pass
        self.revive(spec)

    @rule(index=st.integers(0, MAX_BRANCHES - 1), spec=SPECS)
    def fork(self, index: int, spec: str) -> None:
        if len(self.branches) >= MAX_BRANCHES:
            return
        parent = self.branches[index % len(self.branches)]
        forked = self.admin(
            "POST", f"/v1/tapes/{self.tape}/fork", json={"parent": parent, "children": 1}
        )
        (child,) = forked["branches"]
        self.branches.append(child)
        self.allowed[child] = {key: set(counts) for key, counts in self.allowed[parent].items()}
        for (branch, path), (_, committed) in self.unanswered.items():
            key = self.keys.get(path)
            if branch == parent and committed and key is not None:
                # The parent's lost answer may have advanced the lineage the child copies.
                allowed = self.allowed[child].setdefault(key, {0})
                allowed.add(max(allowed) + 1)
        self.wrote[child] = self.wrote[parent]
        self.revive(spec)

    @rule(
        first=st.integers(0, MAX_BRANCHES - 1),
        second=st.integers(1, MAX_BRANCHES - 1),
        path=st.sampled_from(PATHS),
        spec=SPECS,
    )
    def siblings(self, first: int, second: int, path: str, spec: str) -> None:
        """Two branches ask one read at once: the second waits on the first's live call."""
        a = self.branches[first % len(self.branches)]
        b = self.branches[(first + second) % len(self.branches)]
        if a == b:
            return
        attempts = {branch: self.attempt_for(branch, path) for branch in (a, b)}
        answers: dict[str, dict[str, Any]] = {}
        try:
            answers[a] = self.resolve(a, "GET", path, attempt=attempts[a])
            answers[b] = self.resolve(b, "GET", path, attempt=attempts[b])
        except Died:
            for branch in (a, b):
                self.lost_answer(branch, path, attempts[branch])
            self.revive(spec)
            return
        for branch, answer in answers.items():
            self.finish_read(branch, path, attempts[branch], answer)
            self.revive(spec)

    @invariant()
    def the_resolver_is_up(self) -> None:
        if hasattr(self, "http"):
            assert self.resolver.alive() or self.resolver.server is None


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_arguments(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    if request.param == "sqlite":
        yield ["--data", str(tmp_path)]
        return
    with private_schema_url(request.getfixturevalue("postgres_url")) as url:
        yield ["--data", str(tmp_path), "--database-url", url]


def test_the_lifecycle_survives_a_kill_at_any_failpoint(store_arguments: list[str]) -> None:
    resolver = Resolver(store_arguments)
    CrashMachine.resolver = resolver
    machine = CrashMachine.TestCase
    machine.settings = settings(
        max_examples=EXAMPLES,
        stateful_step_count=12,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=os.environ.get("GROUNDHOG_CRASH_RANDOM") is None,
    )
    try:
        machine().runTest()
    finally:
        resolver.stop()
    print(f"crash injection: {EXAMPLES} examples, {resolver.crashes} kills")
