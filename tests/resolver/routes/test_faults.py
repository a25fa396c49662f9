"""Faults through the real resolver: the same fault at the same point for every branch."""

from __future__ import annotations

import pytest

from tests.resolver.proxy_double import ProxyDouble, World

FLAKY = [{"kind": "503", "rate": 0.5, "path": "/search", "retry_after": 2}]


def run_group(proxy: ProxyDouble, tape: str, mode: str = "groundhog") -> dict[str, list[str]]:
    proxy.open(tape, world_seed=3, mode=mode, faults=FLAKY)
    seen: dict[str, list[str]] = {}
    for branch in proxy.fork(tape, children=3):
        seen[branch] = [
            proxy.ask(tape, branch, path="/search", query=[["q", str(i)]]).decision
            for i in range(12)
        ]
    return seen


def test_every_branch_meets_the_same_faults_and_the_world_never_sees_them(
    proxy: ProxyDouble, tape_name: str
) -> None:
    before = proxy.world.live_calls
    seen = run_group(proxy, tape_name)
    first, *rest = seen.values()
    assert all(other == [d if d != "recorded" else "shared" for d in first] for other in rest)
    injected = first.count("injected")
    assert 0 < injected < 12  # rate 0.5 over 12 addresses
    assert proxy.world.live_calls - before == 12 - injected  # recorded once, never injected
    served = proxy.ask(tape_name, "root/b0", path="/search", query=[["q", "x"]])
    # A retry is the next occurrence: a new address with its own draw.
    report = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    assert report["totals"]["decisions"]["injected"] == 3 * injected + (
        served.decision == "injected"
    )


def test_injected_answer_carries_the_fault_header_and_retry_after(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name, faults=[{"kind": "429", "rate": 1.0, "host": "api.example.com"}])
    served = proxy.ask(tape_name, "root", path="/anything")
    assert served.decision == "injected" and served.status == 429
    headers = served.resolution["response"]["headers"]
    assert ["X-Groundhog-Fault", "429"] in headers and ["Retry-After", "1"] in headers
    assert served.resolution["action"] == "serve" and served.resolution["delay_ms"] == 0
    other_host = proxy.ask(tape_name, "root", path="/anything", host="other.example.com")
    assert other_host.decision == "recorded"


def test_latency_and_timeout_tell_the_proxy_how_long_to_hold(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(
        tape_name,
        faults=[
            {"kind": "latency", "rate": 1.0, "path": "/slow", "latency_ms": 300},
            {"kind": "timeout", "rate": 1.0, "path": "/hang", "hold_ms": 700},
        ],
    )
    slow = proxy.ask(tape_name, "root", path="/slow")
    assert slow.decision == "recorded" and slow.resolution["delay_ms"] == 300
    again = proxy.ask(tape_name, "root", path="/slow")
    assert again.resolution["delay_ms"] == 300
    hang = proxy.ask(tape_name, "root", path="/hang")
    assert hang.decision == "injected" and hang.status == 504
    assert hang.resolution["delay_ms"] == 700


def test_re_recording_gives_the_same_digest_and_naive_faults_are_independent(
    proxy: ProxyDouble, tape_name: str
) -> None:
    # Each recording against a fresh world, so the world's own answers repeat too.
    recordings = []
    for suffix in "ab":
        double = ProxyDouble(str(proxy.http.base_url), World())
        try:
            recordings.append(run_group(double, f"{tape_name}-{suffix}"))
        finally:
            double.http.close()
    first, second = recordings
    assert first == second
    digests = {proxy.http.get(f"/v1/tapes/{tape_name}-{x}/digest").json()["digest"] for x in "ab"}
    assert len(digests) == 1
    naive = run_group(proxy, f"{tape_name}-naive", mode="naive")
    patterns = {tuple(d == "injected" for d in decisions) for decisions in naive.values()}
    assert len(patterns) > 1  # each branch its own faults: the baseline


@pytest.mark.parametrize(
    "bad",
    [
        [{"kind": "explode", "rate": 0.1}],
        [{"kind": "503", "rate": 1.5}],
        [{"kind": "503"}],
        [{"kind": "503", "rate": 0.1, "colour": "red"}],
    ],
)
def test_bad_fault_rules_are_a_422_naming_the_field(
    proxy: ProxyDouble, tape_name: str, bad: list
) -> None:
    reply = proxy.http.post("/v1/tapes", json={"name": tape_name, "faults": bad})
    assert reply.status_code == 422
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert "faults.0" in reply.json()["detail"]
