"""`/v1/leases/*` over a real resolver on SQLite and PostgreSQL: hostile events are refused with
a problem and change nothing, and a renewal long poll answers a lease asked back in its process
at once while an undisturbed one renews once per poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import ServerProcess, running_server


@pytest.fixture
def leasing(database_args: list[str]) -> Iterator[ServerProcess]:
    env = {"GROUNDHOG_BRANCH_LEASE_SECONDS": "3"}  # a renewal poll holds a second
    with running_server(["resolver", *database_args], env=env) as server:
        yield server


def take(http: httpx.Client, tape: str, branch: str = "root") -> dict:
    reply = http.post("/v1/leases/take", json={"tape": tape, "branch": branch, "holder": "h1"})
    assert reply.status_code == 200, reply.text
    return reply.json()


def held(grant: dict) -> list[dict]:
    return [{"branch_id": grant["branch"]["id"], "epoch": grant["epoch"]}]


def test_events_naming_an_unknown_exchange_are_refused_and_apply_nothing(
    leasing: ServerProcess,
) -> None:
    proxy = ProxyDouble(leasing.url)
    proxy.open("t")
    grant = take(proxy.http, "t")
    event = {
        "method": "GET",
        "url": "http://w.example/x",
        "key_hash": "k",
        "occurrence": 0,
        "fingerprint": "",
        "exchange_id": 987654321,
        "serial": 1,
    }
    body = {"branch_id": grant["branch"]["id"], "holder": "h1", "epoch": grant["epoch"]}
    reply = proxy.http.post("/v1/leases/events", json={**body, "events": [event]})
    assert reply.status_code == 422, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert "987654321" in reply.json()["detail"]
    # Nothing applied: the lease is still held, and serial 1 is still to come.
    renewed = proxy.http.post("/v1/leases/renew", json={"holder": "h1", "leases": held(grant)})
    assert renewed.json()["renewed"] == [grant["branch"]["id"]]
    assert take(proxy.http, "t")["shipped"] == 0


def test_a_renewal_answers_when_asked_back_here_and_else_after_a_third_of_a_lease(
    leasing: ServerProcess,
) -> None:
    proxy = ProxyDouble(leasing.url)
    proxy.open("t")
    grant = take(proxy.http, "t")
    started = time.monotonic()
    quiet = proxy.http.post("/v1/leases/renew", json={"holder": "h1", "leases": held(grant)})
    assert quiet.json()["renewed"] == [grant["branch"]["id"]]
    assert time.monotonic() - started >= 0.9  # held for a third of the 3 s lease
    with httpx.Client(base_url=leasing.url, timeout=30, trust_env=False) as other:
        polling = proxy.http.build_request(
            "POST", "/v1/leases/renew", json={"holder": "h1", "leases": held(grant)}
        )
        # A second proxy's ask for the branch asks the holder back while the poll is held.
        answers: list[httpx.Response] = []
        poller = threading.Thread(target=lambda: answers.append(proxy.http.send(polling)))
        poller.start()
        refused = other.post(
            "/v1/resolve",
            json={
                "tape": "t",
                "branch": "root",
                "method": "GET",
                "host": "w.example",
                "port": 80,
                "lease_holder": "h2",
            },
        )
        poller.join(timeout=30)
    assert refused.status_code == 503, refused.text
    assert answers and answers[0].json()["revoke"] == [grant["branch"]["id"]]


def test_a_granted_take_leaves_held_polls_alone_and_a_refused_one_asks_the_holder_back(
    leasing: ServerProcess,
) -> None:
    proxy = ProxyDouble(leasing.url)
    proxy.open("t")
    forked = proxy.http.post("/v1/tapes/t/fork", json={"parent": "root", "children": 1})
    branch = forked.json()["branches"][0]  # before any lease: a fork asks the holders back
    grant = take(proxy.http, "t")
    poll = {"holder": "h1", "leases": held(grant)}
    with httpx.Client(base_url=leasing.url, timeout=30, trust_env=False) as other:
        started = time.monotonic()
        answers: list[httpx.Response] = []
        request = proxy.http.build_request("POST", "/v1/leases/renew", json=poll)
        poller = threading.Thread(target=lambda: answers.append(proxy.http.send(request)))
        poller.start()
        # Another proxy leases another branch: nothing is asked back, the poll stays held.
        granted = other.post(
            "/v1/leases/take", json={"tape": "t", "branch": branch, "holder": "h2"}
        )
        assert granted.status_code == 200, granted.text
        poller.join(timeout=30)
        assert time.monotonic() - started >= 0.9  # held its third of the 3 s lease
        assert answers and answers[0].json()["revoke"] == []
        # Taking h1's branch is refused and asks h1 back: its next held poll answers at once.
        answers.clear()
        poller = threading.Thread(target=lambda: answers.append(proxy.http.send(request)))
        poller.start()
        refused = other.post(
            "/v1/leases/take", json={"tape": "t", "branch": "root", "holder": "h2"}
        )
        poller.join(timeout=30)
    assert refused.status_code == 503, refused.text
    assert answers and answers[0].json()["revoke"] == [grant["branch"]["id"]]
