"""End to end on a real resolver: exogenous digests, fork signals in the API, report and metrics."""

from __future__ import annotations

import re
from urllib.parse import quote

from tests.resolver.proxy_double import ProxyDouble


def test_digests_tell_which_rollouts_saw_the_same_world(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    same_a, same_b, writer, reordered = proxy.fork(tape_name, children=4)
    for branch in (same_a, same_b):
        proxy.ask(tape_name, branch, path="/search")
        proxy.ask(tape_name, branch, path="/docs/1")
    proxy.ask(tape_name, writer, path="/search")
    proxy.ask(tape_name, writer, "POST", "/docs/1", body=b"mine")
    assert proxy.ask(tape_name, writer, path="/docs/1").decision == "refetched"
    proxy.ask(tape_name, reordered, path="/docs/1")
    proxy.ask(tape_name, reordered, path="/search")

    def branch(path: str) -> dict:
        return proxy.http.get(f"/v1/tapes/{tape_name}/branches/{quote(path, safe='')}").json()

    a, b, w, r = (branch(p) for p in (same_a, same_b, writer, reordered))
    assert a["exogenous_digest"] == b["exogenous_digest"]
    assert a["exogenous_answers"] == 2 and w["exogenous_answers"] == 1  # the refetch is its own
    assert len({a["exogenous_digest"], w["exogenous_digest"], r["exogenous_digest"]}) == 3
    assert b["signals"] == {
        "reads": 2,
        "shared": 2,
        "refetched": 0,
        "live_calls": 0,
        "share_rate": 1.0,
        "refetch_rate": 0.0,
    }
    fork = branch("root")["fork"]
    assert fork["children"] == sorted([same_a, same_b, writer, reordered])
    assert (fork["reads"], fork["shared"], fork["refetched"]) == (8, 5, 1)
    assert fork["live_calls"] == 4  # search, docs, the write, the refetch
    assert fork["distinct_worlds"] == 3

    listed = proxy.http.get(f"/v1/tapes/{tape_name}/branches").json()["branches"]
    assert {x["path"]: x["exogenous_digest"] for x in listed}[same_b] == a["exogenous_digest"]
    report = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    assert report["forks"]["root"] == fork
    assert report["branches"][writer]["refetch_rate"] == 0.5
    assert report["branches"][same_b]["exogenous_digest"] == a["exogenous_digest"]

    metrics = proxy.http.get("/metrics").text
    assert re.search(r'^groundhog_fork_share_rate\{stat="max"\} ', metrics, flags=re.M)
    assert re.search(r'^groundhog_fork_live_calls\{stat="mean"\} ', metrics, flags=re.M)
    forks = float(re.search(r"^groundhog_forks (\S+)$", metrics, flags=re.M).group(1))
    assert forks >= 1
    fork_lines = [line for line in metrics.splitlines() if line.startswith("groundhog_fork")]
    assert fork_lines and not any("tape=" in line or "branch=" in line for line in fork_lines)
