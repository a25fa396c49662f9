"""Miss simulators end to end: real resolver, real proxy, the example simulator as a process."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.proxy.clients import proxy_url, with_curl
from tests.proxy.stack import Stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream
from tests.support.servers import ServerProcess, start_server


@pytest.fixture(scope="module")
def simulator() -> Iterator[ServerProcess]:
    server = start_server(["examples.simulator"])
    try:
        yield server
    finally:
        server.stop()


def test_a_sealed_read_miss_is_simulated_recorded_and_shared_never_live(
    stack: Stack, upstream: Upstream, simulator: ServerProcess
) -> None:
    tape = stack.open_tape(simulator_url=f"{simulator.url}/simulate")
    first, second = stack.fork(tape, 2)
    base = f"http://localhost:{upstream.port}"
    recorded = ask(stack, tape, first, f"{base}/search?q=solar")
    stack.seal(tape)
    live_before = upstream.state.count()

    simulated = ask(stack, tape, first, f"{base}/search?q=wind")
    sibling = ask(stack, tape, second, f"{base}/search?q=wind")
    write = ask(stack, tape, second, f"{base}/docs/1", method="POST", body=b'{"t": 1}')

    assert recorded.decision == "recorded"
    assert simulated.status == 200 and simulated.decision == "simulated"
    assert simulated.headers["x-groundhog-simulated"] == "1"
    content = json.loads(simulated.body)
    assert content["simulated"] is True and content["changed"] == ["q"]
    # The nearest recording's readable key (its headers follow, if any are keyed).
    assert re.search(r"/search\?q=solar(?: |$)", content["based_on"]), content["based_on"]
    assert content["answer"] == json.loads(recorded.body)
    assert sibling.decision == "simulated" and sibling.body == simulated.body
    assert write.status == 502 and write.decision == "refused"  # writes are not simulated
    assert upstream.state.count() == live_before

    report = stack.admin("GET", f"/v1/tapes/{tape}/report").json()
    assert report["totals"]["decisions"]["simulated"] == 2
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": second}).json()
    exchange_id = events["events"][0]["exchange_id"]
    stored = stack.admin("GET", f"/v1/tapes/{tape}/exchanges/{exchange_id}").json()
    assert ["X-Groundhog-Simulated", "1"] in stored["response"]["headers"]  # kept in exports


def test_writes_are_simulated_only_when_the_tape_says_so(
    stack: Stack, upstream: Upstream, simulator: ServerProcess
) -> None:
    tape = stack.open_tape(simulator_url=f"{simulator.url}/simulate", simulate_writes=True)
    first, second = stack.fork(tape, 2)
    stack.seal(tape)
    url = f"http://localhost:{upstream.port}/docs/1"
    write = ask(stack, tape, first, url, "POST", b"x")
    replayed = ask(stack, tape, second, url, "POST", b"x")
    assert write.status == 200 and write.decision == "simulated"
    assert json.loads(write.body)["based_on"] is None
    # The sibling is served the recorded simulated write, and its versions move on as well.
    assert replayed.decision == "simulated" and replayed.body == write.body
    assert stack.branch(tape, first)["versions"] == stack.branch(tape, second)["versions"] != {}
    assert upstream.state.count() == 0


def test_a_failing_simulator_refuses_and_records_nothing(stack: Stack, upstream: Upstream) -> None:
    dead = start_server(["examples.simulator"])
    dead_url = f"{dead.url}/simulate"
    dead.stop()
    tape = stack.open_tape(simulator_url=dead_url)
    stack.seal(tape)
    miss = ask(stack, tape, "root", f"http://localhost:{upstream.port}/x")
    assert miss.status == 502 and miss.decision == "refused"
    assert "simulator failed" in json.loads(miss.body)["simulator_error"]
    assert stack.admin("GET", f"/v1/tapes/{tape}").json()["exchanges"] == 0


def test_a_world_answer_marking_itself_simulated_is_shared_as_the_worlds(
    stack: Stack, upstream: Upstream
) -> None:
    """Through curl and the sidecar that holds both branches (leases are the default): the
    world's own `X-Groundhog-Simulated` is not stored, so the sibling is served the recording
    as `shared`, unmarked, and its event says so (reward code masking simulated reads would
    otherwise drop a real observation)."""
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    url = f"http://localhost:{upstream.port}/forged-simulated"
    recorded = with_curl(proxy_url(stack.proxy.port, tape, first), url, stack.ca, {})
    served = with_curl(proxy_url(stack.proxy.port, tape, second), url, stack.ca, {})
    assert (recorded.status, recorded.decision) == (200, "recorded")
    assert (served.status, served.decision) == (200, "shared")
    assert "x-groundhog-simulated" not in served.headers
    assert served.body == recorded.body
    assert upstream.state.count("/forged-simulated") == 1
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": second}).json()
    assert [event["decision"] for event in events["events"]] == ["shared"]
