"""WebSocket and HTTP/2 over TLS under `groundhog run --capture`, end to end.

The proxied paths (tests/proxy/test_websocket_tape.py, test_http2_upstream.py) show siblings
share a WebSocket conversation and an HTTP/2 read; a captured worker must get the same without
naming the proxy: the real `websockets` client and httpx with `http2=True` run inside capture
namespaces with no proxy variables (tests/groundhog/capture_protocols_worker.py), trusting only
the Groundhog CA for wss:// and https://. Needs root, `ip` and iptables; skipped with the
reason otherwise (the fixtures are tests/groundhog/test_capture.py's).
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.groundhog import test_capture
from tests.groundhog.test_capture import captured
from tests.proxy.stack import Stack
from tests.proxy.websocket_world import World, serving_world
from tests.support.certs import write_private_ca, write_self_signed
from tests.support.h2_server import H2Upstream

WORKER = Path(__file__).with_name("capture_protocols_worker.py")
SAID = ["search solar", "b:binary", "search wind"]

# The capture stack of tests/groundhog/test_capture.py, one per module.
capture_possible = test_capture.capture_possible
capture_dir = test_capture.capture_dir
stack = test_capture.stack


@pytest.fixture
def ws_world() -> Iterator[World]:
    with serving_world() as running:
        yield running


@pytest.fixture
def wss_world(tmp_path: Path) -> Iterator[World]:
    cert, key = write_self_signed(tmp_path, ["127.0.0.1"])  # the proxy dials it --ssl-insecure
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with serving_world(context) as running:
        yield running


@pytest.fixture
def h2_world(tmp_path: Path) -> Iterator[H2Upstream]:
    _ca, cert, key = write_private_ca(tmp_path, ["127.0.0.1"])
    with H2Upstream(cert, key) as server:
        yield server


def run_siblings(
    stack: Stack, capture_dir: Path, tape: str, arguments: dict[str, list[str]]
) -> list[object]:
    """Each branch's captured worker (with its arguments), all at once; what each printed."""
    workers: list[subprocess.Popen[str]] = [
        captured(stack, capture_dir, tape, branch, sys.executable, str(WORKER), *given)
        for branch, given in arguments.items()
    ]
    outputs = [worker.communicate(timeout=120) for worker in workers]
    for worker, (_, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err + stack.proxy.log()[-6000:]
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def decisions(stack: Stack, tape: str, branches: list[str]) -> list[str]:
    found = []
    for branch in branches:
        events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": branch}).json()
        found += [event["decision"] for event in events["events"]]
    return found


@pytest.mark.parametrize("scheme", ["ws", "wss"])
def test_captured_siblings_share_one_websocket_conversation(
    stack: Stack, capture_dir: Path, scheme: str, request: pytest.FixtureRequest
) -> None:
    world: World = request.getfixturevalue(f"{scheme}_world")
    tape = stack.open_tape()
    first, *others = stack.fork(tape, 3)
    # One records first: the siblings then find the recording (as the proxied test orders it).
    conversation = ["websocket", world.url, *SAID]
    (recorded,) = run_siblings(stack, capture_dir, tape, {first: conversation})
    heard = run_siblings(stack, capture_dir, tape, dict.fromkeys(others, conversation))

    assert world.connections == 1  # the siblings' conversations never reached the world
    assert heard == [recorded, recorded]
    assert isinstance(recorded, list) and str(recorded[0]).startswith("hello ")
    assert world.received == [["search solar", b"binary", "search wind"]]
    assert decisions(stack, tape, [first, *others]) == ["recorded", "shared", "shared"]
    assert "has crashed" not in stack.proxy.log()


def test_captured_http2_siblings_share_a_read_and_each_refetches_after_its_write(
    stack: Stack, capture_dir: Path, h2_world: H2Upstream
) -> None:
    tape = stack.open_tape()
    branches = stack.fork(tape, 4)
    arguments = {branch: ["h2", h2_world.url, f"w{i}"] for i, branch in enumerate(branches)}
    answers = run_siblings(stack, capture_dir, tape, arguments)  # all four at once

    # One live read for four siblings, then one each after its own write.
    assert h2_world.state.versions("/item") == ["HTTP/2"] * 5
    assert all(isinstance(answer, dict) for answer in answers)
    reads = [answer["read"] for answer in answers if isinstance(answer, dict)]
    # httpx offers http/1.1 first, and the proxy honours the client's order: the worker's leg
    # is HTTP/1.1 while the recorded exchange went to the world over HTTP/2.
    assert all(read[0] == 200 and read[2]["http_version"] == "HTTP/2" for read in reads)
    assert len({json.dumps(read) for read in reads}) == 1 and reads[0][2]["count"] == 1
    for index, answer in enumerate(answers):
        assert isinstance(answer, dict)
        status, _, body = answer["write"]
        assert (status, body["path"], body["http_version"]) == (200, f"/write/w{index}", "HTTP/2")
        assert h2_world.state.count(f"/write/w{index}") == 1  # each sibling's own write, live
        assert answer["reread"][2]["count"] > 1  # refetched after the write, not the shared one
    if shutil.which("curl"):  # offers h2 first: HTTP/2 on the worker's leg as well
        fetched = [answer["curl"] for answer in answers if isinstance(answer, dict)]
        assert h2_world.state.versions("/curl") == ["HTTP/2"]
        assert all(version == "2" for version, _ in fetched)
        assert len({json.dumps(body) for _, body in fetched}) == 1
    assert "has crashed" not in stack.proxy.log()
