"""Recorded traffic keeps HTTP/2 to the world, end to end.

Live calls go through mitmproxy's own upstream path, so an HTTP/2 worker talking to an HTTP/2
upstream stays on HTTP/2 for the recorded exchange. The world here is an HTTPS server signed by
a private CA (trusted with `--upstream-ca`) that offers h2 and HTTP/1.1 and says which one each
request came over. An h2 client (curl --http2) asks through the real proxy: the upstream must see
HTTP/2, the exchange is recorded, a sibling branch is served the same bytes from tape without
reaching the world, and an event stream reaches the worker while the upstream is still sending
it, then is shared from tape like any recording.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.proxy.clients import Reply, proxy_url, with_curl
from tests.support.certs import write_private_ca
from tests.support.h2_server import (
    FIRST_EVENT,
    LAST_EVENT,
    RELEASE_TIMEOUT_SECONDS,
    H2Upstream,
)
from tests.support.servers import ServerProcess, start_server

# The proxy's own environment, minus any trust store the machine sets for everyone.
NO_AMBIENT_TRUST = {"SSL_CERT_FILE": "", "REQUESTS_CA_BUNDLE": ""}

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl with HTTP/2")


@pytest.fixture(scope="module")
def private_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return write_private_ca(tmp_path_factory.mktemp("h2-ca"), ["127.0.0.1", "localhost"])


@pytest.fixture
def world(private_ca: tuple[Path, Path, Path]) -> Iterator[H2Upstream]:
    _ca, cert, key = private_ca
    with H2Upstream(cert, key) as server:
        yield server


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, private_ca: tuple[Path, Path, Path]
) -> Iterator[tuple[ServerProcess, ServerProcess, Path]]:
    data = tmp_path_factory.mktemp("h2-data")
    resolver = start_server(["resolver", "--data", str(data)])
    try:
        arguments = ["--resolver-url", resolver.url, "--data", str(data)]
        proxy = start_server(
            ["proxy", *arguments, "--upstream-ca", str(private_ca[0])],
            health_path=None,
            env=NO_AMBIENT_TRUST,
        )
        try:
            yield resolver, proxy, data
        finally:
            proxy.stop()
    finally:
        resolver.stop()


def siblings(resolver: ServerProcess, tape: str) -> list[str]:
    httpx.post(f"{resolver.url}/v1/tapes", json={"name": tape}, trust_env=False).raise_for_status()
    fork = httpx.post(
        f"{resolver.url}/v1/tapes/{tape}/fork",
        json={"parent": "root", "children": 2},
        trust_env=False,
    )
    fork.raise_for_status()
    return fork.json()["branches"]


def curl_http2(proxy: ServerProcess, data: Path, tape: str, branch: str) -> list[str]:
    """curl as an HTTP/2 worker: it offers h2 first, and the proxy mirrors its offer upstream."""
    ca = data / "ca" / "mitmproxy-ca-cert.pem"
    via = proxy_url(proxy.port, tape, branch)
    return ["curl", "-sS", "-i", "-N", "--http2", "--proxy", via, "--cacert", str(ca)]


def ask(proxy: ServerProcess, data: Path, tape: str, branch: str, url: str) -> Reply:
    return with_curl(
        proxy_url(proxy.port, tape, branch),
        url,
        data / "ca" / "mitmproxy-ca-cert.pem",
        {},
        http_version="--http2",
    )


def read_until(process: subprocess.Popen[bytes], marker: bytes, seconds: float) -> bytes:
    """What `process` wrote until `marker` appeared (or its output ended, or time ran out)."""
    assert process.stdout is not None
    received = b""
    deadline = time.monotonic() + seconds
    while marker not in received and time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            break
        received += chunk
    return received


def test_a_recorded_exchange_goes_upstream_over_http2_and_is_shared(
    stack: tuple[ServerProcess, ServerProcess, Path], world: H2Upstream
) -> None:
    resolver, proxy, data = stack
    first, second = siblings(resolver, "h2-item")
    recorded = ask(proxy, data, "h2-item", first, f"{world.url}/item?q=1")
    shared = ask(proxy, data, "h2-item", second, f"{world.url}/item?q=1")

    assert recorded.protocol == "HTTP/2"  # the worker's side
    assert (recorded.status, recorded.decision) == (200, "recorded")
    assert recorded.json()["http_version"] == "HTTP/2"  # what the world says it was asked over
    assert world.state.versions("/item") == ["HTTP/2"]  # once: the sibling's read went nowhere
    assert (shared.protocol, shared.status, shared.decision) == ("HTTP/2", 200, "shared")
    assert shared.body == recorded.body


def test_an_http2_stream_flows_while_recorded_and_is_shared_from_tape(
    stack: tuple[ServerProcess, ServerProcess, Path], world: H2Upstream
) -> None:
    resolver, proxy, data = stack
    first, second = siblings(resolver, "h2-stream")
    command = [*curl_http2(proxy, data, "h2-stream", first), f"{world.url}/stream"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as curl:
        # The upstream holds its last event until released (or its own timeout): the first
        # reaches the worker alone only if the proxy passes the stream on as it comes. A
        # buffering proxy delivers both at once after that timeout, which fails below.
        early = read_until(curl, FIRST_EVENT, seconds=RELEASE_TIMEOUT_SECONDS + 60)
        world.release()
        rest, errors = curl.communicate(timeout=60)
    assert FIRST_EVENT in early and LAST_EVENT not in early, early
    head, _, body = (early + rest).rpartition(b"\r\n\r\n")
    assert curl.returncode == 0, errors
    assert body == FIRST_EVENT + LAST_EVENT
    assert b"x-groundhog-decision: recorded" in head.lower()
    assert world.state.versions("/stream") == ["HTTP/2"]

    shared = ask(proxy, data, "h2-stream", second, f"{world.url}/stream")
    assert (shared.status, shared.decision) == (200, "shared")
    assert shared.body == FIRST_EVENT + LAST_EVENT
    assert world.state.count("/stream") == 1
