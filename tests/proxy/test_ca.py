"""One CA per deployment: what the resolver serves at /v1/ca.pem is what the proxy signs with.

Both sides create the CA if it is absent (`services.ca.ensure_ca`). Started at the same instant
on a fresh directory they must still agree, or every worker's TLS handshake would fail. The
check is the worker's: trust only /v1/ca.pem and complete a TLS handshake through the proxy
(no request is sent, so nothing reaches any upstream).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from proxy.server import ca_cert_path
from services.ca import CA_KEY_NAME
from tests.support.servers import LOOPBACK, ServerProcess, free_port, start_server

HOST = "ca-check.example"


def _start_together(
    resolver_data: Path, proxy_data: Path, env: dict[str, str] | None = None
) -> tuple[ServerProcess, ServerProcess]:
    """Start the resolver and the proxy at the same moment; stop whichever started on failure."""
    port = free_port()
    resolver_args = ["resolver", "--data", str(resolver_data)]
    proxy_args = ["proxy", "--data", str(proxy_data), "--resolver-url", f"http://{LOOPBACK}:{port}"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        resolver = pool.submit(start_server, resolver_args, port=port, env=env)
        proxy = pool.submit(start_server, proxy_args, env=env, health_path=None)
        started = [future.result() for future in (resolver, proxy) if future.exception() is None]
        failures = [future.exception() for future in (resolver, proxy) if future.exception()]
    if failures:
        for server in started:
            server.stop()
        raise failures[0]  # type: ignore[misc]
    return resolver.result(), proxy.result()


@pytest.fixture
def stopped_at_end() -> Iterator[list[ServerProcess]]:
    servers: list[ServerProcess] = []
    yield servers
    for server in reversed(servers):
        server.stop()


def _served_ca(resolver: ServerProcess) -> bytes:
    reply = httpx.get(f"{resolver.url}/v1/ca.pem", timeout=10, trust_env=False)
    assert reply.status_code == 200, reply.text
    return reply.content


def _handshake_through(proxy: ServerProcess, trusted_ca: bytes) -> dict:
    """The certificate the proxy presents for HOST, verified against `trusted_ca` only."""
    context = ssl.create_default_context(cadata=trusted_ca.decode())
    with socket.create_connection((LOOPBACK, proxy.port), timeout=10) as raw:
        raw.sendall(f"CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = raw.recv(4096)
            assert chunk, f"the proxy closed the tunnel: {reply!r}"
            reply += chunk
        assert reply.split(b" ", 2)[1] == b"200", reply
        with context.wrap_socket(raw, server_hostname=HOST) as tls:
            return tls.getpeercert()


def test_resolver_and_proxy_started_together_share_one_ca(
    tmp_path: Path, stopped_at_end: list[ServerProcess]
) -> None:
    data = tmp_path / "data"
    resolver, proxy = _start_together(data, data)
    stopped_at_end.extend([resolver, proxy])
    served = _served_ca(resolver)
    assert served == ca_cert_path(data).read_bytes()
    presented = _handshake_through(proxy, served)
    assert ("DNS", HOST) in presented["subjectAltName"]


def test_both_honour_groundhog_ca_dir(tmp_path: Path, stopped_at_end: list[ServerProcess]) -> None:
    shared = tmp_path / "shared-ca"
    resolver, proxy = _start_together(
        tmp_path / "resolver", tmp_path / "proxy", env={"GROUNDHOG_CA_DIR": str(shared)}
    )
    stopped_at_end.extend([resolver, proxy])
    served = _served_ca(resolver)
    assert served == ca_cert_path(tmp_path / "proxy", shared).read_bytes()
    assert (shared / CA_KEY_NAME).exists()
    assert not (tmp_path / "resolver" / "ca").exists()
    assert not (tmp_path / "proxy" / "ca").exists()
    _handshake_through(proxy, served)


def test_the_resolver_creates_the_ca_at_start_up(
    tmp_path: Path, stopped_at_end: list[ServerProcess]
) -> None:
    stopped_at_end.append(start_server(["resolver", "--data", str(tmp_path)]))
    # Before anyone asked for /v1/ca.pem: a proxy started later finds it in place.
    assert ca_cert_path(tmp_path).exists() and (tmp_path / "ca" / CA_KEY_NAME).exists()
