"""End to end: the internal protocol against a real resolver process, the test playing the proxy."""

from __future__ import annotations

import json

from resolver import wait_tokens
from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import ServerProcess


def test_siblings_get_identical_bytes_for_action_independent_reads(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name, world_seed=7)
    branches = proxy.fork(tape_name, children=4)
    served = [
        proxy.ask(tape_name, branch, path="/search", query=[["q", "solar"]]) for branch in branches
    ]
    assert [s.decision for s in served] == ["recorded", "shared", "shared", "shared"]
    assert len({s.body for s in served}) == 1
    assert proxy.world.live_calls == 1
    first = served[0].resolution
    assert first["response"] is None and first["ticket"] is not None
    # Headers keep their order and duplicates.
    assert served[1].resolution["response"]["headers"][1:] == [["X-Dup", "1"], ["X-Dup", "2"]]


def test_sharing_survives_divergent_read_order(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    paths = ["/x", "/y", "/x", "/z"]
    first = {p_i: proxy.ask(tape_name, a, path=p).body for p_i, p in enumerate(paths)}
    order = [3, 2, 1, 0]
    second = {i: proxy.ask(tape_name, b, path=paths[i]) for i in order}
    # Same key + same occurrence = same bytes, regardless of the order asked.
    assert second[1].body == first[1] and second[3].body == first[3]
    # /x asked twice: occurrence 0 then 1, each shared with the sibling's same occurrence.
    assert second[2].occurrence == 0 and second[0].occurrence == 1
    assert second[2].body == first[0] and second[0].body == first[2]
    assert all(s.decision == "shared" for s in second.values())


def test_fingerprint_empty_until_relevant_write_then_refetched(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    before = proxy.ask(tape_name, a, path="/docs/1")
    assert before.fingerprint == ""
    write = proxy.ask(tape_name, a, "POST", "/docs/1", body=b"mine")
    assert write.decision == "write"
    after = proxy.ask(tape_name, a, path="/docs/1")
    assert after.decision == "refetched" and after.fingerprint != ""
    assert after.json()["doc"] == "mine"
    other_host = proxy.ask(tape_name, a, path="/docs/1", host="other.example.com")
    assert other_host.fingerprint == ""  # closure: a write to one host leaves others alone
    sibling = proxy.ask(tape_name, b, path="/docs/1")
    assert sibling.decision == "shared" and sibling.body == before.body


def test_two_branches_making_the_same_write_share_afterwards(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    a, b, c = proxy.fork(tape_name, children=3)
    for branch in (a, b):
        assert proxy.ask(tape_name, branch, "POST", "/docs/1", body=b"same").decision == "write"
    proxy.ask(tape_name, c, "POST", "/docs/1", body=b"different")
    read_a = proxy.ask(tape_name, a, path="/docs/1")
    read_b = proxy.ask(tape_name, b, path="/docs/1")
    read_c = proxy.ask(tape_name, c, path="/docs/1")
    assert read_a.decision == "refetched" and read_b.decision == "shared"
    assert read_a.body == read_b.body and read_a.fingerprint == read_b.fingerprint
    assert read_c.decision == "refetched" and read_c.fingerprint != read_a.fingerprint


def test_child_forked_mid_run_continues_parent_occurrences(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    first = proxy.ask(tape_name, "root", path="/tick")
    second = proxy.ask(tape_name, "root", path="/tick")
    (child,) = proxy.fork(tape_name, children=1)
    (other,) = proxy.fork(tape_name, children=["other"])
    assert proxy.ask(tape_name, "root", path="/tick").occurrence == 2
    continued = proxy.ask(tape_name, child, path="/tick")
    assert continued.occurrence == 2 and continued.decision == "shared"
    assert {first.occurrence, second.occurrence} == {0, 1}
    assert proxy.ask(tape_name, other, path="/tick").body == continued.body


def test_child_inherits_parent_writes(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    proxy.ask(tape_name, "root", "POST", "/docs/1", body=b"v1")
    parent_read = proxy.ask(tape_name, "root", path="/docs/1")
    (child,) = proxy.fork(tape_name, children=1)
    child_read = proxy.ask(tape_name, child, path="/docs/1")
    assert child_read.fingerprint == parent_read.fingerprint != ""
    branch = proxy.http.get(f"/v1/tapes/{tape_name}/branches/root%2Fb0").json()
    assert (
        branch["versions"]
        == proxy.http.get(f"/v1/tapes/{tape_name}/branches/root").json()["versions"]
    )
    assert branch["fork_point"] == 2 and branch["parent"] == "root"


def test_replay_serves_stale_after_a_write(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, mode="replay")
    a, b, c = proxy.fork(tape_name, children=3)
    original = proxy.ask(tape_name, a, path="/docs/1")
    proxy.ask(tape_name, b, "POST", "/docs/1", body=b"changed")
    lie = proxy.ask(tape_name, b, path="/docs/1")
    assert lie.decision == "stale" and lie.body == original.body
    assert lie.fingerprint == ""
    assert proxy.ask(tape_name, c, path="/docs/1").decision == "shared"


def test_naive_never_shares(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, mode="naive", cooperative_hosts=["api.example.com"], world_seed=5)
    a, b = proxy.fork(tape_name, children=2)
    served = [proxy.ask(tape_name, branch, path="/search") for branch in (a, b, a)]
    assert [s.decision for s in served] == ["recorded"] * 3
    assert len({s.body for s in served}) == 3
    assert (
        served[0].fingerprint.startswith("naive:")
        and served[0].fingerprint != served[1].fingerprint
    )
    seeds = [dict(s.resolution["upstream_headers"])["X-Groundhog-Seed"] for s in served]
    assert seeds[0] != seeds[1] and seeds[0] == seeds[2]


def test_cooperative_headers_only_for_cooperative_hosts(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, world_seed=11, cooperative_hosts=["world.test"])
    coop = proxy.ask(tape_name, "root", path="/a", host="world.test")
    assert coop.resolution["upstream_headers"] == [
        ["X-Groundhog-Branch", "root"],
        ["X-Groundhog-Seed", "11"],
        ["X-Groundhog-Occurrence", "0"],
    ]
    assert proxy.ask(tape_name, "root", path="/a").resolution["upstream_headers"] == []


def test_sealed_miss_is_502_naming_key_and_nearest_keys(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    for query in ("solar", "wind", "coal", "tidal"):
        proxy.ask(tape_name, "root", path="/search", query=[["q", query]])
    proxy.ask(tape_name, "root", "POST", "/docs/1", body=b"x")
    assert proxy.http.post(f"/v1/tapes/{tape_name}/seal").json()["online"] is False
    live_before = proxy.world.live_calls
    miss = proxy.ask(tape_name, "root", path="/search", query=[["q", "solarx"]])
    assert miss.decision == "refused" and miss.status == 502
    problem = miss.json()
    assert problem["tape"] == tape_name and problem["branch"] == "root"
    assert problem["request_key"] == "v4 GET https://api.example.com/search?q=solarx"
    assert problem["nearest_keys"][0] == "v4 GET https://api.example.com/search?q=solar"
    assert len(problem["nearest_keys"]) == 3
    assert problem["occurrence"] == 0 and "fingerprint" in problem
    assert miss.resolution["response"]["headers"] == [["Content-Type", "application/problem+json"]]
    refused_write = proxy.ask(tape_name, "root", "POST", "/docs/2", body=b"x")
    assert refused_write.decision == "refused"
    events = proxy.http.get(f"/v1/tapes/{tape_name}/events", params={"branch": "root"}).json()
    assert [(e["decision"], e["status"]) for e in events["events"][-2:]] == [("refused", 502)] * 2
    assert proxy.world.live_calls == live_before
    proxy.http.post(f"/v1/tapes/{tape_name}/unseal")
    # The root wrote to the host, so the read's fingerprint is non-empty: fetched fresh.
    assert (
        proxy.ask(tape_name, "root", path="/search", query=[["q", "solarx"]]).decision
        == "refetched"
    )


def test_sealed_tape_replays_recorded_writes_and_their_effects(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    (a,) = proxy.fork(tape_name, children=1)
    proxy.ask(tape_name, a, "POST", "/docs/1", body=b"w")
    fresh = proxy.ask(tape_name, a, path="/docs/1")
    proxy.http.post(f"/v1/tapes/{tape_name}/seal")
    (b,) = proxy.fork(tape_name, children=1)
    assert proxy.ask(tape_name, b, "POST", "/docs/1", body=b"w").decision == "replayed-write"
    again = proxy.ask(tape_name, b, path="/docs/1")
    assert again.decision == "shared" and again.body == fresh.body


def test_a_transport_failure_is_upstream_failed_not_recorded_and_the_next_ask_goes_live(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    failed = proxy.ask(tape_name, a, path="/flaky", error="timeout")
    assert failed.decision == "upstream-failed"
    assert failed.status == 502 and failed.json()["error_kind"] == "timeout"
    assert "nothing was recorded" in failed.json()["detail"]
    assert proxy.http.get(f"/v1/tapes/{tape_name}").json()["exchanges"] == 0
    live_before = proxy.world.live_calls
    sibling = proxy.ask(tape_name, b, path="/flaky")
    assert sibling.decision == "recorded" and sibling.status == 200
    assert proxy.world.live_calls == live_before + 1
    metrics = proxy.http.get("/metrics").text
    assert "groundhog_upstream_failed_total" in metrics


def test_a_tape_may_opt_in_to_recording_transport_failures(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name, record_transport_failures=True)
    a, b = proxy.fork(tape_name, children=2)
    failed = proxy.ask(tape_name, a, path="/flaky", error="timeout")
    assert failed.decision == "recorded"
    assert failed.status == 502 and failed.json()["error_kind"] == "timeout"
    sibling = proxy.ask(tape_name, b, path="/flaky")
    assert sibling.decision == "shared" and sibling.body == failed.body


def test_passthrough_hosts_are_forwarded_unrecorded(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, passthrough_hosts=["live.example.com"])
    first = proxy.ask(tape_name, "root", path="/p", host="live.example.com")
    assert first.decision == "passthrough" and first.resolution["ticket"] is None
    assert proxy.ask(tape_name, "root", path="/p", host="live.example.com").body != first.body
    tape = proxy.http.get(f"/v1/tapes/{tape_name}").json()
    assert tape["exchanges"] == 0


def test_package_indexes_and_toolchain_downloads_pass_through_by_default(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    asks = [
        ("pypi.org", "/simple/openai/"),
        ("files.pythonhosted.org", "/packages/openai.whl"),
        ("github.com", "/astral-sh/uv/releases/download/0.9.0/uv.tar.gz"),
    ]
    assert [proxy.ask(tape_name, "root", path=p, host=h).decision for h, p in asks] == [
        "passthrough"
    ] * 3
    # github.com's API and pages are a world like any other.
    assert proxy.ask(tape_name, "root", path="/astral-sh/uv", host="github.com").decision == (
        "recorded"
    )
    report = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    assert report["branches"]["root"]["passthrough"] == 3
    assert proxy.http.get(f"/v1/tapes/{tape_name}").json()["exchanges"] == 1
    proxy.http.post(f"/v1/tapes/{tape_name}/seal")
    assert proxy.ask(tape_name, "root", path="/simple/x/", host="pypi.org").decision == "refused"


def test_a_tape_may_record_the_toolchain(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, toolchain_passthrough=False)
    assert proxy.ask(tape_name, "root", path="/simple/x/", host="pypi.org").decision == "recorded"


def test_unknown_ticket_is_409(proxy: ProxyDouble) -> None:
    reply = proxy.http.post("/v1/record", json={"ticket": "nope", "passthrough": "streamed"})
    assert reply.status_code == 409
    assert reply.headers["content-type"] == "application/problem+json"
    assert "nope" in reply.json()["detail"]


def test_ticket_records_once(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    ticket = proxy.resolve(tape_name, "root", path="/once").json()["ticket"]
    record = {"ticket": ticket, "response": {"status": 200, "headers": [], "body": ""}}
    assert proxy.http.post("/v1/record", json=record).status_code == 200
    assert proxy.http.post("/v1/record", json=record).status_code == 409


def test_a_world_answer_cannot_mark_itself_simulated(proxy: ProxyDouble, tape_name: str) -> None:
    """Only the tape's simulator marks an answer invented: a world's own X-Groundhog-Simulated
    is dropped, so siblings are served it as shared (not masked as simulated)."""
    proxy.open(tape_name)
    first, second = proxy.fork(tape_name, children=2)
    mark = [["X-Groundhog-Simulated", "1"]]
    assert proxy.ask(tape_name, first, path="/marked", response_headers=mark).decision == "recorded"
    served = proxy.resolve(tape_name, second, path="/marked").json()
    assert served["decision"] == "shared", served
    names = {name.lower() for name, _ in served["response"]["headers"]}
    assert "x-groundhog-simulated" not in names, served["response"]["headers"]


def test_bad_resolve_inputs_are_precise_problems(proxy: ProxyDouble, tape_name: str) -> None:
    assert proxy.resolve("missing-tape", "root").status_code == 404
    proxy.open(tape_name)
    missing_branch = proxy.resolve(tape_name, "root/nope")
    assert missing_branch.status_code == 404 and "root/nope" in missing_branch.json()["detail"]
    malformed = proxy.resolve(tape_name, "main/../x")
    assert malformed.status_code == 422 and "malformed" in malformed.json()["detail"]
    bad_name = proxy.resolve("../etc", "root")
    assert bad_name.status_code == 422
    no_method = proxy.http.post("/v1/resolve", json={"tape": tape_name})
    assert no_method.status_code == 422
    assert no_method.headers["content-type"] == "application/problem+json"
    assert "method" in no_method.json()["detail"]


def test_bad_record_bodies_are_422_problems_naming_the_field(proxy: ProxyDouble) -> None:
    no_ticket = proxy.http.post("/v1/record", json={"passthrough": "streamed"})
    assert no_ticket.status_code == 422
    assert no_ticket.headers["content-type"] == "application/problem+json"
    assert "ticket" in no_ticket.json()["detail"]
    bad_status = proxy.http.post(
        "/v1/record",
        json={"ticket": "t", "response": {"status": "two hundred", "headers": [], "body": ""}},
    )
    assert bad_status.status_code == 422 and "status" in bad_status.json()["detail"]
    not_json = proxy.http.post("/v1/record", content=b"{not json")
    assert not_json.status_code == 422


def test_non_utf8_and_invalid_json_bodies_are_keyed_as_bytes(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    json_headers = [["Content-Type", "application/json"]]
    for body in (b"\xff\xfe\x00binary", b"{not json", b'{"b": 1, "a": 2}'):
        first = proxy.ask(tape_name, "root", "PUT", "/blob", body=body, headers=json_headers)
        assert first.decision == "write"
    key = proxy.resolve(
        tape_name, "root", "PUT", "/blob", body=b'{"a":2,"b":1}', headers=json_headers
    )
    assert key.status_code == 200
    events = proxy.http.get(f"/v1/tapes/{tape_name}/exchanges/3")
    if events.status_code == 200:  # the exchange route arrives with the inspection routes
        assert 'body:{"a":2,"b":1}' in events.json()["key_readable"]
    assert json.loads(b'{"a":2}') == {"a": 2}


def test_bodies_over_the_limit_are_413_and_lose_nothing(
    tight_server: ServerProcess, tape_name: str
) -> None:
    proxy = ProxyDouble(tight_server.url)
    proxy.open(tape_name)
    (child,) = proxy.fork(tape_name, children=1)
    kept = proxy.ask(tape_name, "root", path="/kept")
    big = proxy.resolve(tape_name, "root", "POST", "/upload", body=b"x" * 1001)
    assert big.status_code == 413 and "max_body_bytes=1000" in big.json()["detail"]
    flagged = proxy.http.post(
        "/v1/resolve",
        json={
            "tape": tape_name,
            "branch": "root",
            "method": "POST",
            "host": "h",
            "port": 80,
            "path": "/up",
            "body_too_large": True,
        },
    ).json()
    assert flagged["decision"] == "passthrough" and flagged["ticket"] is None
    assert proxy.http.get(f"/v1/tapes/{tape_name}").json()["exchanges"] == 1
    again = proxy.ask(tape_name, child, path="/kept")
    assert again.decision == "shared" and again.body == kept.body
    # Far over the limit: refused from Content-Length, before the JSON is parsed.
    huge = proxy.http.post("/v1/record", content=b"x" * 400_000)
    assert huge.status_code == 413 and "max_body_bytes=1000" in huge.json()["detail"]
    assert huge.headers["content-type"] == "application/problem+json"


def test_a_busy_address_answers_wait_at_once_and_wait_answers_wait_again_after_its_window(
    tight_server: ServerProcess, tape_name: str
) -> None:
    proxy = ProxyDouble(tight_server.url)
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    holder = proxy.resolve(tape_name, a, path="/slow").json()
    assert holder["action"] == "forward"
    waiter = proxy.resolve(tape_name, b, path="/slow", follow=False).json()
    assert waiter["action"] == "wait" and waiter["decision"] == "recorded"
    assert waiter["ticket"] is None and waiter["occurrence"] == 0
    again = proxy.wait(waiter["wait"]).json()  # the 0.5 s window ends, the holder still holds
    assert again["action"] == "wait"
    assert wait_tokens.decode(again["wait"]) == wait_tokens.decode(waiter["wait"])
    record = {"ticket": holder["ticket"], "response": {"status": 200, "headers": [], "body": ""}}
    assert proxy.http.post("/v1/record", json=record).status_code == 200
    shared = proxy.wait(waiter["wait"]).json()
    assert shared["action"] == "serve" and shared["decision"] == "shared"


def test_a_malformed_wait_token_is_a_422_naming_the_field(
    proxy: ProxyDouble, tape_name: str
) -> None:
    for token in ("not-base64!", "eJwrzs_PSS0BAAe9Af4=", "x" * 10):
        reply = proxy.wait(token)
        assert reply.status_code == 422, reply.text
        assert reply.json()["field"] == "wait"


def test_first_recording_at_an_address_wins_for_concurrent_writes(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    first = proxy.resolve(tape_name, a, "POST", "/docs/1", body=b"same").json()
    second = proxy.resolve(tape_name, b, "POST", "/docs/1", body=b"same").json()
    assert first["action"] == second["action"] == "forward"  # writes always go live online
    response = {"status": 201, "headers": [], "body": "b2s="}
    ok = proxy.http.post("/v1/record", json={"ticket": first["ticket"], "response": response})
    assert ok.json()["recorded"] is True and ok.json()["response"]["body"] is None
    late = {"status": 201, "headers": [["X-Late", "1"]], "body": "bGF0ZQ=="}
    lost = proxy.http.post("/v1/record", json={"ticket": second["ticket"], "response": late})
    assert lost.json()["exchange_id"] == ok.json()["exchange_id"]
    assert lost.json()["recorded"] is False and lost.json()["decision"] == "write"
    assert lost.json()["response"] == {"status": 201, "headers": [], "body": "b2s="}
    third = proxy.resolve(tape_name, a, "POST", "/docs/1", body=b"same").json()
    failed = proxy.http.post(
        "/v1/record", json={"ticket": third["ticket"], "error": {"kind": "reset", "message": "x"}}
    )
    # A write that never reached the world is not answered with anyone's recorded write.
    assert failed.json()["decision"] == "upstream-failed"
    assert failed.json()["response"]["status"] == 502
    assert proxy.http.get(f"/v1/tapes/{tape_name}").json()["exchanges"] == 1
