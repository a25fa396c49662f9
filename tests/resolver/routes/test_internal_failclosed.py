"""The internal protocol fails closed (issue 12): renewals, seals, the disk reserve, records.

Each test speaks the real protocol to a real resolver process and checks what the proxy is told:
never a `forward` that a seal or a full disk forbids, and always the stored bytes to serve.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import ServerProcess, running_server

SET_COOKIE_RESPONSE = {
    "status": 200,
    "headers": [["Content-Type", "text/plain"], ["Set-Cookie", "session=s3cr3t"]],
    "body": base64.b64encode(b"live bytes").decode(),
}


@pytest.fixture
def short_lease(tmp_path: Path) -> Iterator[ServerProcess]:
    env = {"GROUNDHOG_CLAIM_SECONDS": "1", "GROUNDHOG_RESOLVE_WAIT_SECONDS": "3"}
    with running_server(["resolver", "--data", str(tmp_path)], env=env) as server:
        yield server


@contextlib.contextmanager
def _renewing(url: str, ticket: str, every: float) -> Iterator[Callable[[], int]]:
    """Renew `ticket` every `every` seconds in a thread, as a proxy does while it fetches."""
    stop, count = threading.Event(), [0]
    renewer = ProxyDouble(url)

    def loop() -> None:
        while not stop.is_set():
            reply = renewer.http.post("/v1/renew", json={"ticket": ticket})
            assert reply.status_code == 200, reply.text
            count[0] += 1
            stop.wait(every)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield lambda: count[0]
    finally:
        stop.set()
        thread.join(timeout=30)
        renewer.http.close()


def _record(proxy: ProxyDouble, ticket: str, response: dict) -> dict:
    reply = proxy.http.post("/v1/record", json={"ticket": ticket, "response": response})
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_forward_carries_a_lease_and_renew_keeps_it_until_the_record(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    forward = proxy.resolve(tape_name, "root", path="/r").json()
    assert forward["action"] == "forward" and forward["claim_seconds"] == 30.0
    renewed = proxy.http.post("/v1/renew", json={"ticket": forward["ticket"]})
    assert renewed.status_code == 200 and renewed.json() == {"claim_seconds": 30.0}
    write = proxy.resolve(tape_name, "root", "POST", "/w", body=b"x").json()
    assert proxy.http.post("/v1/renew", json={"ticket": write["ticket"]}).status_code == 200
    _record(proxy, forward["ticket"], SET_COOKIE_RESPONSE)
    for ticket in (forward["ticket"], "never-issued"):
        gone = proxy.http.post("/v1/renew", json={"ticket": ticket})
        assert gone.status_code == 409 and gone.headers["content-type"].startswith(
            "application/problem+json"
        )


def test_a_renewing_holder_is_never_taken_over_and_a_lapsed_one_is(
    short_lease: ServerProcess,
) -> None:
    proxy = ProxyDouble(short_lease.url)
    proxy.open("renewed")
    a, b, c = proxy.fork("renewed", children=3)
    holder = proxy.resolve("renewed", a, path="/slow").json()
    assert holder["claim_seconds"] == 1.0
    waiter = proxy.resolve("renewed", b, path="/slow", follow=False).json()
    assert waiter["action"] == "wait"
    # A holder renewing every third of its lease keeps the address through a whole 3 s window
    # (three lease lengths): the waiter is told to wait again, never to fetch.
    with _renewing(short_lease.url, holder["ticket"], every=1.0 / 3) as renewals:
        polled = proxy.wait(waiter["wait"]).json()
    assert polled["action"] == "wait" and renewals() >= 3
    # Without renewals the lease lapses and the waiter takes over.
    taken = proxy.wait(waiter["wait"]).json()
    assert taken["action"] == "forward" and taken["ticket"] != holder["ticket"]
    assert proxy.http.post("/v1/renew", json={"ticket": holder["ticket"]}).status_code == 409
    # The taker records first; the superseded holder is told to serve the winner's bytes.
    won = _record(proxy, taken["ticket"], SET_COOKIE_RESPONSE)
    assert won["decision"] == "recorded" and won["recorded"] is True
    late = {"status": 200, "headers": [], "body": base64.b64encode(b"other draw").decode()}
    lost = _record(proxy, holder["ticket"], late)
    assert lost["decision"] == "shared" and lost["recorded"] is False
    assert base64.b64decode(lost["response"]["body"]) == b"live bytes"
    assert lost["exchange_id"] == won["exchange_id"]
    sibling = proxy.ask("renewed", c, path="/slow")
    assert sibling.decision == "shared" and sibling.body == b"live bytes"


def test_sealing_while_a_waiter_waits_on_an_expiring_claim_refuses_it(
    short_lease: ServerProcess,
) -> None:
    proxy = ProxyDouble(short_lease.url)
    proxy.open("sealed-wait")
    a, b = proxy.fork("sealed-wait", children=2)
    holder = proxy.resolve("sealed-wait", a, path="/slow").json()
    assert holder["action"] == "forward"
    waiter = proxy.resolve("sealed-wait", b, path="/slow", follow=False).json()
    assert waiter["action"] == "wait"
    assert proxy.http.post("/v1/tapes/sealed-wait/seal").status_code == 200
    answer = proxy.wait(waiter["wait"]).json()  # the holder never renews: its lease lapses
    assert answer["action"] == "serve" and answer["decision"] == "refused"
    assert answer["ticket"] is None
    assert proxy.http.get("/v1/tapes/sealed-wait/report").json()["totals"]["live_calls"] == 1


def test_a_store_short_of_its_disk_reserve_answers_503_and_forwards_nothing(
    tmp_path: Path,
) -> None:
    env = {"GROUNDHOG_DISK_RESERVE_BYTES": str(2**62)}  # more than any disk has free
    with running_server(["resolver", "--data", str(tmp_path)], env=env) as server:
        proxy = ProxyDouble(server.url)
        proxy.open("full")
        for method in ("GET", "POST"):
            reply = proxy.resolve("full", "root", method, "/x", body=b"b")
            assert reply.status_code == 503, reply.text
            problem = reply.json()
            assert problem["type"].endswith("/store-full") and problem["reserve_bytes"] == 2**62
            assert "nothing was sent upstream" in problem["detail"]
        report = proxy.http.get("/v1/tapes/full/report").json()
        assert report["totals"]["live_calls"] == 0 and report["totals"]["decisions"] == {}


def test_the_recorder_is_served_the_stored_form_not_the_live_one(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    forward = proxy.resolve(tape_name, a, path="/cookie").json()
    answer = _record(proxy, forward["ticket"], SET_COOKIE_RESPONSE)
    served = answer["response"]
    assert answer["decision"] == "recorded" and answer["recorded"] is True
    assert served["body"] is None  # byte-identical to what was sent
    assert served["status"] == 200 and served["headers"][0] == ["Content-Type", "text/plain"]
    (name, cookie) = served["headers"][1]  # the stored form: the value a keyed placeholder
    assert name == "Set-Cookie" and cookie.startswith("session=[redacted:set-cookie:")
    assert "s3cr3t" not in json.dumps(served)
    sibling = proxy.resolve(tape_name, b, path="/cookie").json()
    assert sibling["response"]["headers"] == served["headers"]


def test_a_non_latin1_header_is_refused_and_does_not_poison_the_address(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    forward = proxy.resolve(tape_name, a, path="/h").json()
    bad = {"status": 200, "headers": [["X-Ok", "fine"], ["X-Title", "naïve €"]], "body": ""}
    reply = proxy.http.post("/v1/record", json={"ticket": forward["ticket"], "response": bad})
    assert reply.status_code == 422
    assert reply.json()["field"] == "response.headers[1]" and reply.json()["header"] == "X-Title"
    # The claim was released at once: a sibling fetches now instead of waiting out the claim.
    sibling = proxy.resolve(tape_name, b, path="/h", follow=False).json()
    assert sibling["action"] == "forward"
    assert _record(proxy, sibling["ticket"], SET_COOKIE_RESPONSE)["recorded"] is True
    (c,) = proxy.fork(tape_name, children=1)
    assert proxy.ask(tape_name, c, path="/h").status == 200


def test_the_head_form_answers_the_stored_headers_and_keeps_the_ticket(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    forward = proxy.resolve(tape_name, "root", path="/stream").json()
    head = {"status": 200, "headers": SET_COOKIE_RESPONSE["headers"]}
    reply = proxy.http.post("/v1/record", json={"ticket": forward["ticket"], "head": head})
    assert reply.status_code == 200, reply.text
    (content_type, (name, cookie)) = reply.json()["headers"]
    assert content_type == ["Content-Type", "text/plain"] and name == "Set-Cookie"
    assert cookie.startswith("session=[redacted:set-cookie:") and "s3cr3t" not in cookie
    assert proxy.http.post("/v1/renew", json={"ticket": forward["ticket"]}).status_code == 200
    final = {"ticket": forward["ticket"], "response": SET_COOKIE_RESPONSE, "streamed": True}
    assert proxy.http.post("/v1/record", json=final).json()["recorded"] is True


def test_an_unrecorded_write_is_listed_in_the_report(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    write = proxy.resolve(tape_name, "root", "POST", "/docs/1", body=b"w").json()
    in_flight = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    # Its record has not landed: listed already, with what its intent left unknown (a
    # resolver killed now would never hear of it again; write-ahead).
    assert in_flight["totals"]["unrecorded"] == 1
    assert in_flight["unrecorded"][0]["invalidated"] == ["origin:https://api.example.com"]
    note = {"ticket": write["ticket"], "unrecorded": "resolver answered 503 store-full"}
    reply = proxy.http.post("/v1/record", json=note)
    assert reply.status_code == 200 and reply.json()["recorded"] is False
    report = proxy.http.get(f"/v1/tapes/{tape_name}/report").json()
    assert report["totals"]["unrecorded"] == 1
    (listed,) = report["unrecorded"]
    assert listed["branch"] == "root" and listed["decision"] == "write"
    assert listed["url"] == "https://api.example.com/docs/1"
    assert listed["invalidated"] == ["origin:https://api.example.com"]
