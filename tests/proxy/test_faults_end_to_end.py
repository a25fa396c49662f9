"""Injected faults through the real proxy: resets close, holds delay, nothing goes live."""

from __future__ import annotations

import time

import pytest
import requests

from tests.proxy.clients import proxy_url
from tests.proxy.stack import Stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream


def test_each_fault_kind_acts_at_the_boundary_and_never_reaches_the_world(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape(
        faults=[
            {"kind": "reset", "rate": 1.0, "path": "/reset"},
            {"kind": "timeout", "rate": 1.0, "path": "/hang", "hold_ms": 400},
            {"kind": "429", "rate": 1.0, "path": "/busy", "retry_after": 3},
            {"kind": "latency", "rate": 1.0, "path": "/slow", "latency_ms": 300},
        ]
    )
    first, second = stack.fork(tape, 2)
    base = f"http://localhost:{upstream.port}"

    for branch in (first, second):
        with pytest.raises(requests.ConnectionError), requests.Session() as session:
            session.trust_env = False
            session.get(
                f"{base}/reset",
                proxies={"http": proxy_url(stack.proxy.port, tape, branch)},
                timeout=60,
            )
        started = time.monotonic()
        hang = ask(stack, tape, branch, f"{base}/hang")
        held = time.monotonic() - started
        assert hang.status == 504 and hang.decision == "injected"
        assert hang.headers["x-groundhog-fault"] == "timeout"
        assert held >= 0.4  # the hold is a lower bound, whatever the machine's load
        busy = ask(stack, tape, branch, f"{base}/busy")
        assert (busy.status, busy.headers["retry-after"]) == (429, "3")
        assert busy.headers["x-groundhog-fault"] == "429"
        started = time.monotonic()
        slow = ask(stack, tape, branch, f"{base}/slow")
        assert time.monotonic() - started >= 0.3
        assert slow.status == 200 and "x-groundhog-fault" not in slow.headers

    assert upstream.state.count("/slow") == 1  # recorded once, shared by the sibling
    for path in ("/reset", "/hang", "/busy"):
        assert upstream.state.count(path) == 0
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": second}).json()
    assert [e["decision"] for e in events["events"]] == [
        "injected",
        "injected",
        "injected",
        "shared",
    ]
