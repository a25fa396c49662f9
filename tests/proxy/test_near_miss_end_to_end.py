"""A sealed miss explains itself through the real proxy: what differs in the nearest recordings."""

from __future__ import annotations

import json

from tests.proxy.stack import Stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream


def test_sealed_miss_names_the_differing_parameter_and_recorded_occurrences(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    recorder, replayer = stack.fork(tape, 2)
    base = f"http://localhost:{upstream.port}"
    assert ask(stack, tape, recorder, f"{base}/search?q=solar&page=1").decision == "recorded"
    assert ask(stack, tape, recorder, f"{base}/docs/1").decision == "recorded"
    stack.seal(tape)
    calls_before = upstream.state.count()

    miss = ask(stack, tape, replayer, f"{base}/search?q=wind&page=1")
    again = ask(stack, tape, replayer, f"{base}/docs/1")
    beyond = ask(stack, tape, replayer, f"{base}/docs/1")

    assert miss.status == 502 and miss.decision == "refused"
    problem = json.loads(miss.body)
    nearest = problem["near_misses"][0]
    assert nearest["key"].startswith(
        f"v4 GET http://localhost:{upstream.port}/search?page=1&q=solar"
    )
    assert nearest["differences"] == [
        {"part": "query", "name": "q", "asked": "wind", "recorded": "solar"}
    ]
    assert nearest["recorded"] == [{"occurrence": 0, "fingerprint": ""}]
    assert "query parameter 'q': asked 'wind', recorded 'solar'" in problem["detail"]
    assert problem["nearest_keys"][0] == nearest["key"]
    assert again.decision == "shared"
    assert beyond.decision == "refused"
    same = json.loads(beyond.body)["near_misses"][0]
    assert same["differences"] == [] and same["recorded"] == [{"occurrence": 0, "fingerprint": ""}]
    assert "occurrence 1 is not recorded (recorded: 0)" in same["summary"]
    assert upstream.state.count() == calls_before
