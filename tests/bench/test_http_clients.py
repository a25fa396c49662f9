"""Rollout clients: one verifying TLS context, no proxy from the environment, and plain-HTTP
connections kept alive across clients (against a real HTTP/1.1 server on loopback)."""

from __future__ import annotations

import socket
import ssl
from typing import Any

import httpx
import pytest

from bench import http_clients
from tests.bench.recording_server import Seen, server

__all__ = ["server"]  # a fixture, used by name


def _mounted(client: httpx.Client, pattern: str) -> Any:
    mounts = client._mounts
    return next(transport for key, transport in mounts.items() if key.pattern == pattern)


def test_https_reuses_one_verifying_context() -> None:
    context = http_clients.tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    with http_clients.client(proxy="http://127.0.0.1:9") as proxied:
        https = _mounted(proxied, "https://")
        assert https._pool._ssl_context is context


def test_a_client_ignores_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    with http_clients.client(timeout=30) as client:
        assert client.trust_env is False
        plain = _mounted(client, "http://")
        assert isinstance(plain, http_clients.KeptAliveTransport) and plain.route.proxy is None


def test_a_clients_requests_share_one_connection_until_it_closes(
    server: tuple[str, Seen],
) -> None:
    url, seen = server
    for index in range(2):
        with http_clients.client(timeout=30, headers={"X-Branch": f"b{index}"}) as client:
            for step in range(2):
                answer = client.post(f"{url}/docs", params={"n": step}, json={"i": step})
                assert answer.json() == {"ok": True}
            plain = _mounted(client, "http://")
            assert plain.pool.idle() == {("127.0.0.1", int(url.rsplit(":", 1)[1])): 1}
        assert plain.pool.idle() == {}  # closed with its client
    # A connection does not outlive its client (see the module docstring of http_clients).
    assert seen.connections == 2
    assert [number for number, _, _, _ in seen.requests] == [1, 1, 2, 2]
    assert [line for _, line, _, _ in seen.requests] == [
        f"POST /docs?n={step} HTTP/1.1" for _ in range(2) for step in range(2)
    ]
    assert [headers["X-Branch"] for _, _, headers, _ in seen.requests] == ["b0", "b0", "b1", "b1"]
    assert [body for _, _, _, body in seen.requests] == [b'{"i":0}', b'{"i":1}'] * 2


def test_through_a_proxy_the_request_line_is_absolute_and_credentials_go_as_basic(
    server: tuple[str, Seen],
) -> None:
    proxy, seen = server
    with http_clients.client(proxy=proxy.replace("//", "//tape%2F1:b%3A0@"), timeout=30) as client:
        assert client.get("http://world.test:8001/search?q=a#frag").status_code == 200
    _, line, headers, _ = seen.requests[0]
    assert line == "GET http://world.test:8001/search?q=a HTTP/1.1"
    assert headers["Host"] == "world.test:8001"
    assert headers["Proxy-Authorization"] == "Basic dGFwZS8xOmI6MA=="  # "tape/1:b:0"


def test_an_idle_connection_past_its_keepalive_is_not_reused(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    monkeypatch.setattr(http_clients, "KEEPALIVE_SECONDS", 0.0)
    with http_clients.client(timeout=30) as client:
        client.get(url)
        client.get(url)
    assert seen.connections == 2


def test_a_connection_the_server_dropped_resends_a_read_but_not_a_write(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    # The drop is only noticed by the request itself (as when it races the check in `take`).
    monkeypatch.setattr(http_clients, "_still_open", lambda connection: True)
    with http_clients.client(timeout=30) as client:
        client.get(url)
        seen.close_after = 2
        assert client.get(url).status_code == 200  # resent once, on a second connection
        assert seen.connections == 2 and len(seen.requests) == 3
        seen.close_after = 4
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(url, content=b"write")
    assert len(seen.requests) == 4  # the write reached the server once, and was not resent


def test_a_refused_connection_is_an_httpx_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with http_clients.client(timeout=30) as client, pytest.raises(httpx.ConnectError):
        client.get(url)
