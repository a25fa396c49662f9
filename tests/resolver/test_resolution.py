"""Single flight, end to end: concurrent askers of one address make exactly one upstream call."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.resolver.proxy_double import ProxyDouble, World
from tests.support.servers import ServerProcess, running_server, wait_until

ASKERS = 16


def single_flight_waits(base_url: str) -> float:
    text = httpx.get(f"{base_url}/metrics", trust_env=False).text
    found = re.search(r"^groundhog_single_flight_waits_total (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def run_sixteen_askers(
    proxies: list[ProxyDouble], metrics_urls: list[str], tape: str
) -> list[dict]:
    """16 branches ask one address at once; the forwarder records only once all others wait."""
    branches = proxies[0].fork(tape, children=ASKERS)
    world = World()
    waits_before = sum(single_flight_waits(url) for url in metrics_urls)

    def ask(index: int) -> dict:
        proxy = proxies[index % len(proxies)]
        return proxy.resolve(tape, branches[index], path="/noisy").json()

    with ThreadPoolExecutor(ASKERS) as pool:
        futures = [pool.submit(ask, i) for i in range(ASKERS)]
        wait_until(
            lambda: sum(f.done() for f in futures) >= 1, timeout=30, what="the first resolution"
        )
        forwarded = [f.result() for f in futures if f.done()]
        assert [r["action"] for r in forwarded] == ["forward"]
        wait_until(
            lambda: sum(single_flight_waits(u) for u in metrics_urls) - waits_before >= ASKERS - 1,
            timeout=30,
            what="fifteen waiting askers",
        )
        response = world.answer("x", "GET", "api.example.com", "/noisy", b"")
        recorded = proxies[0].http.post(
            "/v1/record", json={"ticket": forwarded[0]["ticket"], "response": response}
        )
        assert recorded.status_code == 200
        results = [f.result(timeout=30) for f in futures]
    assert world.live_calls == 1
    return results


def test_sixteen_concurrent_askers_make_one_forward(
    proxy: ProxyDouble, tape_name: str, resolver_server: ServerProcess
) -> None:
    proxy.open(tape_name)
    results = run_sixteen_askers([proxy], [resolver_server.url], tape_name)
    decisions = sorted(r["decision"] for r in results)
    assert decisions == ["recorded"] + ["shared"] * (ASKERS - 1)
    bodies = {r["response"]["body"] for r in results if r["action"] == "serve"}
    assert len(bodies) == 1


@pytest.fixture
def short_lease_server(tmp_path: Path) -> Iterator[ServerProcess]:
    env = {"GROUNDHOG_CLAIM_SECONDS": "0.5", "GROUNDHOG_RESOLVE_WAIT_SECONDS": "20"}
    with running_server(["resolver", "--data", str(tmp_path)], env=env) as server:
        yield server


def test_expired_lease_lets_a_waiter_take_over(short_lease_server: ServerProcess) -> None:
    proxy = ProxyDouble(short_lease_server.url)
    proxy.open("lease")
    a, b = proxy.fork("lease", children=2)
    holder = proxy.resolve("lease", a, path="/slow").json()
    assert holder["action"] == "forward"
    # The holder never records (it "died"); the waiter takes over once the lease lapses.
    taker = proxy.resolve("lease", b, path="/slow").json()
    assert taker["action"] == "forward" and taker["ticket"] != holder["ticket"]
    response = {"status": 200, "headers": [], "body": "dGFrZW4="}
    assert (
        proxy.http.post(
            "/v1/record", json={"ticket": taker["ticket"], "response": response}
        ).status_code
        == 200
    )
    # A late record from the old holder keeps the first recording (nothing is overwritten).
    late = {"status": 200, "headers": [], "body": "bGF0ZQ=="}
    reply = proxy.http.post("/v1/record", json={"ticket": holder["ticket"], "response": late})
    assert reply.status_code == 200
    (c,) = proxy.fork("lease", children=1)
    assert proxy.resolve("lease", c, path="/slow").json()["response"]["body"] == "dGFrZW4="


def test_single_flight_across_two_resolvers_sharing_a_store(database_args: list[str]) -> None:
    args = ["resolver", *database_args]
    with running_server(args) as first, running_server(args) as second:
        proxies = [ProxyDouble(first.url), ProxyDouble(second.url)]
        proxies[0].open("shared-store")
        results = run_sixteen_askers(proxies, [first.url, second.url], "shared-store")
        decisions = sorted(r["decision"] for r in results)
        assert decisions == ["recorded"] + ["shared"] * (ASKERS - 1)
        assert len({r["response"]["body"] for r in results if r["response"]}) == 1


def test_a_waiter_taking_over_on_a_sealed_tape_with_a_simulator_decides_as_its_ask(
    short_lease_server: ServerProcess,
) -> None:
    """The wait token carries the whole ask: the tape's simulator survives the round trip, so
    a waiter that takes over a lapsed claim after a seal is simulated, as a fresh ask would be
    (issue 29, defect 4: it was refused)."""
    with running_server(["examples.simulator"]) as simulator:
        proxy = ProxyDouble(short_lease_server.url)
        proxy.open("sim-wait", simulator_url=f"{simulator.url}/simulate")
        holder_branch, waiter_branch, fresh_branch = proxy.fork("sim-wait", children=3)
        holder = proxy.resolve("sim-wait", holder_branch, path="/x").json()
        assert holder["action"] == "forward"  # online: it holds the claim, then "dies"
        assert proxy.http.post("/v1/tapes/sim-wait/seal").status_code == 200
        waiting = proxy.resolve("sim-wait", waiter_branch, path="/x", follow=False).json()
        assert waiting["action"] == "wait"
        taken_over = proxy.wait(waiting["wait"]).json()
        while taken_over["action"] == "wait":
            taken_over = proxy.wait(taken_over["wait"]).json()
        fresh = proxy.resolve("sim-wait", fresh_branch, path="/x").json()
    assert (taken_over["action"], taken_over["decision"]) == ("serve", "simulated")
    assert (fresh["action"], fresh["decision"]) == ("serve", "simulated")
    assert taken_over["response"]["body"] == fresh["response"]["body"]
