"""The rollout client against a real HTTP/1.1 server on loopback: what goes on the wire, what
the hooks see, and what the agents read back."""

from __future__ import annotations

import socket

import httpx
import pytest

from bench import http_clients
from bench.rollout_client import Request, Response, RolloutClient
from tests.bench.recording_server import Seen, server
from worldsim import agent

__all__ = ["server"]  # a fixture, used by name


def test_a_request_carries_defaults_params_and_body_and_answers_as_httpx_would(
    server: tuple[str, Seen],
) -> None:
    url, seen = server
    with RolloutClient(timeout=30, headers={"X-Groundhog-Tape": "t"}) as client:
        answer = client.request(
            "post",
            f"{url}/docs/a b?x=1",
            params=[("q", "wind farm"), ("q", "é")],
            headers={"Authorization": "Bearer s-1"},
            content=b'{"id": 1}',
        )
    assert client.pool.idle() == {}  # its connection closed with it
    _, line, headers, body = seen.requests[0]
    assert line == "POST /docs/a%20b?x=1&q=wind+farm&q=%C3%A9 HTTP/1.1"
    assert headers["Host"] == url.removeprefix("http://")
    assert headers["X-Groundhog-Tape"] == "t" and headers["Authorization"] == "Bearer s-1"
    assert headers["Content-Length"] == "9" and body == b'{"id": 1}'
    assert answer.status_code == 200 and answer.json() == {"ok": True}
    assert answer.headers["content-type"] == answer.headers.get("Content-Type")
    assert "CONTENT-TYPE" in answer.headers and answer.headers.get("x-none") is None


def test_hooks_see_the_request_before_it_is_sent_and_the_answer_after(
    server: tuple[str, Seen],
) -> None:
    url, seen = server
    events: list[tuple[str, object]] = []

    def before(request: Request) -> None:
        events.append(("request", (request.method, request.url, len(seen.requests))))

    def after(response: Response) -> None:
        events.append(("response", (response.request.url.path, response.status_code)))

    with RolloutClient(timeout=30, event_hooks={"request": [before], "response": [after]}) as c:
        c.get(f"{url}/sessions", params={"a": "1"})
    assert events == [
        ("request", ("GET", f"{url}/sessions?a=1", 0)),
        ("response", ("/sessions", 200)),
    ]


def test_through_a_proxy_the_target_is_absolute(server: tuple[str, Seen]) -> None:
    proxy, seen = server
    with RolloutClient(proxy=proxy, timeout=30) as client:
        client.get("http://world.test:8001/search", params={"q": "a"})
    assert seen.requests[0][1] == "GET http://world.test:8001/search?q=a HTTP/1.1"
    assert seen.requests[0][2]["Host"] == "world.test:8001"


def test_the_agents_transport_takes_it_as_it_takes_httpx(server: tuple[str, Seen]) -> None:
    url, _ = server
    with RolloutClient(timeout=30) as lean, httpx.Client(trust_env=False) as full:
        replies = [
            agent.HttpTransport(client, url).send("GET", "/x", [("q", "a")], None, {"A": "1"})
            for client in (lean, full)
        ]
    assert replies[0].status == replies[1].status == 200
    assert replies[0].body == replies[1].body
    assert replies[0].headers["content-type"] == replies[1].headers["content-type"]


def test_only_plain_http_absolute_urls_are_sent() -> None:
    with RolloutClient(timeout=30) as client:
        for url in ("https://127.0.0.1:9/x", "/relative"):
            with pytest.raises(ValueError, match="plain-HTTP absolute URLs"):
                client.get(url)


def test_a_refused_connection_is_httpxs_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/x"
    with RolloutClient(timeout=30) as client, pytest.raises(httpx.ConnectError):
        client.get(url)


def test_clients_sharing_a_pool_reuse_one_connection_and_leave_it_open(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    # A loaded machine may take longer than the keep-alive window between the two clients.
    monkeypatch.setattr(http_clients, "KEEPALIVE_SECONDS", 3600.0)
    shared = http_clients.ConnectionPool()
    try:
        for branch in ("root/b0", "root/b1"):
            headers = {"X-Groundhog-Branch": branch}
            with RolloutClient(timeout=30, headers=headers, pool=shared) as client:
                assert client.get(f"{url}/context").status_code == 200
            # Closing a client leaves the shared pool's connection for the next rollout.
            assert sum(shared.idle().values()) == 1
        assert seen.connections == 1
        assert [headers["X-Groundhog-Branch"] for _, _, headers, _ in seen.requests] == [
            "root/b0",
            "root/b1",
        ]
    finally:
        shared.close()
    assert shared.idle() == {}
