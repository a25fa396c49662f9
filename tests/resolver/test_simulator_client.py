"""Unit tests of the simulator call and its recording (resolver/simulator_client.py).

The simulator is a real HTTP server on an ephemeral loopback port; the claimed `simulated`
address comes from the real resolver, whose own simulator call is replaced by one that keeps the
ask and ticket, so each test hands them to a `SimulatorClient` itself.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI

from engine.asks import Ask
from engine.policy import Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution
from engine.simulation import PROTOCOL
from groundhog.protocol.headers import SIMULATED
from groundhog.protocol.wire import WireResponse, wire_response
from resolver import simulator_client
from resolver.app import create_app
from resolver.resolution import Resolver
from resolver.settings import load_settings
from resolver.simulator_client import SimulatorClient
from tests.support.servers import LOOPBACK, wait_until
from tests.support.threaded_server import ThreadedServer

with warnings.catch_warnings():
    # Starlette 1.x flags its httpx-based TestClient as deprecated; it still works as before.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TAPE = "sim"
FIRST, SIBLING = "root/b0", "root/b1"
MAX_BODY_BYTES = 1000
# Far above any timeout a test sets; a held reply is released when its test ends.
HOLD_BOUND_SECONDS = 60.0


@dataclass
class SimulatorDouble:
    """What the simulator answers every POST, and every request body it was sent."""

    status: int = 200
    body: bytes = b""
    hold: bool = False
    received: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def answer(self, status: int, headers: list[list[str]], body: bytes) -> None:
        """Reply 200 with a well-formed simulator answer of `status`, `headers` and `body`."""
        self.status = 200
        encoded = base64.b64encode(body).decode()
        self.body = json.dumps({"status": status, "headers": headers, "body": encoded}).encode()


class _SimulatorServer(ThreadingHTTPServer):
    def __init__(self, double: SimulatorDouble) -> None:
        super().__init__((LOOPBACK, 0), _Handler)
        self.double = double


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._send(200 if self.path == "/healthz" else 404, b"ok")

    def do_POST(self) -> None:
        double = cast(_SimulatorServer, self.server).double
        length = int(self.headers.get("Content-Length", "0"))
        double.received.append(json.loads(self.rfile.read(length)))
        if double.hold:
            double.release.wait(timeout=HOLD_BOUND_SECONDS)
        # A held reply's client has given up and closed the connection by now.
        with contextlib.suppress(OSError):
            self._send(double.status, double.body)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test's assertions say what happened; a line per request is noise


@dataclass
class Simulator:
    double: SimulatorDouble
    url: str


@pytest.fixture
def simulator() -> Iterator[Simulator]:
    double = SimulatorDouble()
    with ThreadedServer(_SimulatorServer(double)) as server:
        base = f"http://{LOOPBACK}:{server.port}"

        def healthy() -> bool:
            try:
                return httpx.get(f"{base}/healthz", timeout=1.0, trust_env=False).is_success
            except httpx.HTTPError:
                return False

        wait_until(healthy, timeout=30, what=f"the simulator double at {base}")
        try:
            yield Simulator(double, f"{base}/simulate")
        finally:
            double.release.set()  # a held handler must not outlive the server


@dataclass
class KeptAsks:
    """Stands in for the resolver's own simulator call: keeps each claimed ask and its ticket."""

    asks: list[tuple[Ask, str]] = field(default_factory=list)

    def answer(self, ask: Ask, ticket: str) -> tuple[Decision, WireResponse]:
        self.asks.append((ask, ticket))
        return Decision.SIMULATED, wire_response(204, [], "")


@dataclass
class Resolving:
    client: TestClient
    resolver: Resolver
    kept: KeptAsks

    def resolve(self, path: str, branch: str = FIRST) -> Resolution:
        wire = ResolveRequest(tape=TAPE, branch=branch, method="GET", host="h", port=80, path=path)
        result = self.resolver.resolve(wire)
        assert isinstance(result, Resolution)
        return result

    def claimed(self, path: str, branch: str = FIRST) -> tuple[Ask, str]:
        """A sealed miss claimed for the simulator, as the resolver hands it over."""
        before = len(self.kept.asks)
        self.resolve(path, branch)
        assert len(self.kept.asks) == before + 1, "the resolver did not claim a simulated ask"
        return self.kept.asks[-1]

    def exchanges(self) -> int:
        return int(self.client.get(f"/v1/tapes/{TAPE}").json()["exchanges"])


@pytest.fixture
def resolving(
    tmp_path: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Resolving]:
    """Tape `sim` naming the simulator, `/search?q=solar` recorded, forked in two, sealed."""
    with TestClient(create_app(load_settings(data_dir=tmp_path))) as client:
        resolver: Resolver = cast(FastAPI, client.app).state.resolver
        kept = KeptAsks()
        monkeypatch.setattr(resolver, "simulator", kept)
        assert client.post(
            "/v1/tapes", json={"name": TAPE, "simulator_url": simulator.url}
        ).is_success
        resolving = Resolving(client, resolver, kept)
        live = resolving.resolve("/search?q=solar", "root")
        body = base64.b64encode(b"solar results").decode()
        answer = {"status": 200, "headers": [["Content-Type", "text/plain"]], "body": body}
        recorded = client.post("/v1/record", json={"ticket": live.ticket, "response": answer})
        assert recorded.status_code == 200, recorded.text
        forked = client.post(f"/v1/tapes/{TAPE}/fork", json={"parent": "root", "children": 2})
        assert forked.json()["branches"] == [FIRST, SIBLING]
        assert client.post(f"/v1/tapes/{TAPE}/seal").is_success
        yield resolving


def _client(resolving: Resolving, max_body_bytes: int = MAX_BODY_BYTES) -> SimulatorClient:
    return SimulatorClient(
        resolving.resolver.store,
        max_body_bytes=max_body_bytes,
        redaction_key=resolving.resolver.redaction_key,
    )


def _body(response: WireResponse) -> bytes:
    assert response["body"] is not None
    return base64.b64decode(response["body"])


def test_an_answer_is_marked_recorded_and_served_to_the_next_ask(
    resolving: Resolving, simulator: Simulator
) -> None:
    simulator.double.answer(201, [["Content-Type", "application/json"]], b'{"wind": 1}')
    ask, ticket = resolving.claimed("/search?q=wind")

    decision, response = _client(resolving).answer(ask, ticket)

    assert decision is Decision.SIMULATED
    assert response["status"] == 201 and _body(response) == b'{"wind": 1}'
    assert [SIMULATED, "1"] in response["headers"]
    (sent,) = simulator.double.received
    assert sent["protocol"] == PROTOCOL and sent["tape"] == TAPE
    assert sent["request"]["url"] == "http://h/search?q=wind"
    nearest = sent["nearest"][0]
    assert "/search?q=solar" in nearest["key"]
    assert base64.b64decode(nearest["response"]["body"]) == b"solar results"
    assert resolving.exchanges() == 2
    sibling = resolving.resolve("/search?q=wind", SIBLING)
    assert sibling.decision is Decision.SIMULATED and sibling.response is not None
    assert base64.b64decode(str(sibling.response["body"])) == b'{"wind": 1}'
    assert len(simulator.double.received) == 1


def _assert_refused(response: WireResponse, resolving: Resolving, *reasons: str) -> None:
    """A sealed-miss 502 naming why, nothing recorded, and the address free for a sibling."""
    assert response["status"] == 502
    error = json.loads(_body(response))["simulator_error"]
    assert error.startswith("the tape's simulator failed")
    for reason in reasons:
        assert reason in error
    assert resolving.exchanges() == 1
    resolving.claimed("/search?q=wind", SIBLING)  # claimed again, not waiting on a held claim


def test_an_unreachable_simulator_is_refused(resolving: Resolving) -> None:
    ask, ticket = resolving.claimed("/search?q=wind")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind((LOOPBACK, 0))  # bound, never listening: a connection is refused
        port = bound.getsockname()[1]
        unreachable = replace(ask, simulator_url=f"http://{LOOPBACK}:{port}/simulate")
        decision, response = _client(resolving).answer(unreachable, ticket)
    assert decision is Decision.REFUSED
    _assert_refused(response, resolving, "refused")


def test_a_simulator_slower_than_the_timeout_is_refused(
    resolving: Resolving, simulator: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(simulator_client, "SIMULATOR_TIMEOUT_SECONDS", 0.5)
    simulator.double.hold = True
    ask, ticket = resolving.claimed("/search?q=wind")
    decision, response = _client(resolving).answer(ask, ticket)
    assert decision is Decision.REFUSED
    _assert_refused(response, resolving, "timed out")


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (500, b"simulator broke", "500"),
        (404, b"", "404"),
        (200, b"not json", "Expecting value"),
        (200, b'{"status": "200"}', "status must be an integer"),
        (200, b'{"status": 200, "body": "not base64!"}', "body must be base64"),
    ],
)
def test_a_failed_or_malformed_answer_is_refused(
    resolving: Resolving, simulator: Simulator, status: int, body: bytes, reason: str
) -> None:
    simulator.double.status, simulator.double.body = status, body
    ask, ticket = resolving.claimed("/search?q=wind")
    decision, response = _client(resolving).answer(ask, ticket)
    assert decision is Decision.REFUSED
    _assert_refused(response, resolving, reason)


def test_an_answer_over_the_body_limit_is_refused(
    resolving: Resolving, simulator: Simulator
) -> None:
    simulator.double.answer(200, [], b"x" * 17)
    ask, ticket = resolving.claimed("/search?q=wind")
    decision, response = _client(resolving, max_body_bytes=16).answer(ask, ticket)
    assert decision is Decision.REFUSED
    _assert_refused(response, resolving, "17 bytes is over max_body_bytes")
