"""End to end: events, exchanges, report and digest describe what each branch was served."""

from __future__ import annotations

import base64
import json

from tests.resolver.proxy_double import ProxyDouble


def _run_workflow(proxy: ProxyDouble, tape: str) -> None:
    a, b = proxy.fork(tape, children=2)
    for branch in (a, b):
        proxy.ask(tape, branch, path="/search", query=[["q", "x"]])
        proxy.ask(tape, branch, path="/docs/1")
    proxy.ask(tape, b, "POST", "/docs/1", body=b"b-wrote")
    proxy.ask(tape, b, path="/docs/1")
    proxy.ask(tape, a, path="/down", host="down.example.com", error="connect")
    proxy.ask(tape, b, path="/down", host="down.example.com")


def test_events_page_through_a_branch(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    _run_workflow(proxy, tape_name)
    first = proxy.http.get(
        f"/v1/tapes/{tape_name}/events", params={"branch": "root/b1", "limit": 2}
    ).json()
    assert [e["seq"] for e in first["events"]] == [1, 2] and first["next_after"] == 2
    assert first["events"][0]["decision"] == "shared"
    assert first["events"][0]["url"] == "https://api.example.com/search?q=x"
    rest = proxy.http.get(
        f"/v1/tapes/{tape_name}/events", params={"branch": "root/b1", "after": 2}
    ).json()
    # root/b0's connect failure was not recorded, so root/b1 fetched /down itself.
    assert [e["decision"] for e in rest["events"]] == ["write", "refetched", "recorded"]
    assert rest["next_after"] is None
    assert rest["events"][-1]["status"] == 200
    b0 = proxy.http.get(f"/v1/tapes/{tape_name}/events", params={"branch": "root/b0"}).json()
    assert b0["events"][-1]["decision"] == "upstream-failed"
    assert b0["events"][-1]["status"] == 502 and b0["events"][-1]["exchange_id"] is None
    everything = proxy.http.get(f"/v1/tapes/{tape_name}/events", params={"limit": 1000}).json()
    assert len(everything["events"]) == 8


def test_exchange_shows_request_and_response(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    served = proxy.ask(
        tape_name,
        "root",
        "POST",
        "/docs/9",
        body=b"hello",
        headers=[["Authorization", "Bearer secret"], ["Content-Type", "text/plain"]],
    )
    events = proxy.http.get(f"/v1/tapes/{tape_name}/events", params={"branch": "root"}).json()
    exchange_id = events["events"][0]["exchange_id"]
    shown = proxy.http.get(f"/v1/tapes/{tape_name}/exchanges/{exchange_id}").json()
    assert shown["request"]["method"] == "POST"
    headers = shown["request"]["headers"]
    assert headers[0][0] == "Authorization" and headers[0][1].startswith("Bearer [redacted:")
    assert "secret" not in json.dumps(shown)  # the credential is replaced by its placeholder
    assert base64.b64decode(shown["request"]["body"]) == b"hello"
    assert base64.b64decode(shown["response"]["body"]) == served.body
    assert shown["error"] is None and shown["request_key"] == served.resolution["request_key"]
    assert proxy.http.get(f"/v1/tapes/{tape_name}/exchanges/999999").status_code == 404


def test_report_counts_decisions_per_branch(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    _run_workflow(proxy, tape_name)
    report = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    totals = report["totals"]
    assert totals["decisions"] == {
        "recorded": 3,
        "refetched": 1,
        "shared": 2,
        "upstream-failed": 1,
        "write": 1,
    }
    assert totals["reads"] == 7 and totals["reads_shared"] == 2
    assert totals["live_calls"] == 6 and totals["upstream_errors"] == 1
    assert totals["upstream_failed"] == 1 and totals["unrecorded"] == 0
    assert totals["lies"] == 0 and totals["lie_rate"] == 0.0
    b1 = report["branches"]["root/b1"]
    assert b1["decisions"] == {"recorded": 1, "refetched": 1, "shared": 2, "write": 1}
    assert report["unrecorded"] == []
    assert report["branches"]["root"]["reads"] == 0


def test_report_counts_lies_in_replay(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, mode="replay")
    a, b = proxy.fork(tape_name, children=2)
    proxy.ask(tape_name, a, path="/docs/1")
    proxy.ask(tape_name, b, "POST", "/docs/1", body=b"x")
    proxy.ask(tape_name, b, path="/docs/1")
    report = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    assert report["branches"]["root/b1"]["lies"] == 1
    assert report["branches"]["root/b1"]["lie_rate"] == 1.0
    assert report["totals"]["lie_rate"] == 0.5


def test_digest_is_the_same_for_the_same_workflow(proxy: ProxyDouble, tape_name: str) -> None:
    digests = []
    for suffix in ("-one", "-two"):
        proxy.world.documents.clear()
        proxy.world._noise = iter(range(1000, 2000))
        proxy.open(tape_name + suffix)
        _run_workflow(proxy, tape_name + suffix)
        digests.append(proxy.http.get(f"/v1/tapes/{tape_name + suffix}/digest").json())
    assert digests[0]["digest"] == digests[1]["digest"] and digests[0]["exchanges"] == 5
    proxy.ask(tape_name + "-two", "root", path="/more")
    changed = proxy.http.get(f"/v1/tapes/{tape_name}-two/digest").json()
    assert changed["digest"] != digests[0]["digest"]


def test_out_of_range_cursors_and_ids_are_422_naming_the_field(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    proxy.ask(tape_name, "root", path="/a")
    for params in ({"after": 2**70}, {"after": 2**63}, {"branch": "root", "after": 2**70}):
        reply = proxy.http.get(f"/v1/tapes/{tape_name}/events", params=params)
        assert reply.status_code == 422, reply.text
        assert reply.json()["errors"][0]["field"] == "query.after"
    for exchange_id in (2**63, 2**70):
        reply = proxy.http.get(f"/v1/tapes/{tape_name}/exchanges/{exchange_id}")
        assert reply.status_code == 422, reply.text
        assert reply.json()["errors"][0]["field"] == "path.exchange_id"
    assert proxy.http.get(f"/v1/tapes/{tape_name}/exchanges/{2**63 - 1}").status_code == 404


def test_report_counts_view_is_the_full_reports_counts(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    _run_workflow(proxy, tape_name)
    full = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    counts = proxy.http.get(f"/v1/tapes/{tape_name}/report", params={"view": "counts"}).json()
    assert set(counts) == {"tape", "mode", "totals", "branches", "unrecorded"}
    assert counts["unrecorded"] == full["unrecorded"]
    assert counts["totals"]["decisions"] == full["totals"]["decisions"]
    for path, branch in counts["branches"].items():
        assert "exogenous_digest" not in branch and "possibly_contaminated" not in branch
        assert branch == {key: full["branches"][path][key] for key in branch}
    assert counts["totals"] == {key: full["totals"][key] for key in counts["totals"]}
    assert counts["branches"]["root/b1"]["live_calls"] == 3


def test_report_view_must_be_one_of_the_views(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    answer = proxy.http.get(f"/v1/tapes/{tape_name}/report", params={"view": "totals"})
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert "'full'" in answer.json()["detail"] and "'counts'" in answer.json()["detail"]
