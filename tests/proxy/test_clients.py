"""Real clients through the real proxy and resolver to a real upstream, over HTTP and HTTPS."""

from __future__ import annotations

import pytest

from tests.proxy.clients import CLIENTS, node_available, proxy_url, with_curl
from tests.proxy.stack import Stack
from tests.proxy.upstream_server import GZIP_BODY, Upstream

# How each client names its tape and branch: some by headers, some by proxy credentials.
IDENTITY = {
    "curl": "credentials",
    "requests": "credentials",
    "httpx": "headers",
    "aiohttp": "credentials",
    "node": "headers",
}


def _private_headers_reached(upstream: Upstream) -> list[str]:
    return [
        name
        for seen in upstream.state.requests
        for name, _ in seen.headers
        if name.lower().startswith("x-groundhog") or name.lower() == "proxy-authorization"
    ]


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_records_then_shares(
    stack: Stack, upstream: Upstream, tls_upstream: Upstream, client: str, scheme: str
) -> None:
    if client == "node" and not node_available():
        pytest.skip("node is not installed (the Node client test needs /usr/bin/node)")
    world = tls_upstream if scheme == "https" else upstream
    tape = stack.open_tape()
    branch = stack.fork(tape, 1)[0]
    if IDENTITY[client] == "headers":
        proxy, headers = (
            proxy_url(stack.proxy.port),
            {
                "X-Groundhog-Tape": tape,
                "X-Groundhog-Branch": branch,
            },
        )
    else:
        proxy, headers = proxy_url(stack.proxy.port, tape, branch), {}
    send = CLIENTS[client]
    url = f"{world.url.replace('127.0.0.1', 'localhost')}/item?q={client}"

    first = send(proxy, url, stack.ca, headers)
    again = send(proxy, url, stack.ca, headers)

    assert first.status == 200, first.body
    assert first.decision == "recorded"
    assert first.headers["x-groundhog-occurrence"] == "0"
    assert again.status == 200
    # A second ask in the same branch is the next occurrence: recorded too, not served stale.
    assert again.decision == "recorded"
    assert again.headers["x-groundhog-occurrence"] == "1"
    assert world.state.count("/item") == 2
    assert _private_headers_reached(world) == []

    # A sibling asking the same two reads gets both from the tape, byte for byte.
    sibling = stack.fork(tape, 1)[0]
    if IDENTITY[client] == "headers":
        headers["X-Groundhog-Branch"] = sibling
    else:
        proxy = proxy_url(stack.proxy.port, tape, sibling)
    shared = send(proxy, url, stack.ca, headers)
    assert shared.decision == "shared"
    assert shared.body == first.body
    assert world.state.count("/item") == 2


@pytest.mark.parametrize(
    ("http_version", "protocol"), [("--http1.1", "HTTP/1.1"), ("--http2", "HTTP/2")]
)
def test_https_over_http1_and_http2(
    stack: Stack, tls_upstream: Upstream, http_version: str, protocol: str
) -> None:
    tape = stack.open_tape()
    first_branch, second_branch = stack.fork(tape, 2)
    url = f"https://localhost:{tls_upstream.port}/gzip"

    def ask(branch: str):
        proxy = proxy_url(stack.proxy.port, tape, branch)
        return with_curl(proxy, url, stack.ca, {}, http_version=http_version)

    first, second = ask(first_branch), ask(second_branch)

    assert (first.protocol, second.protocol) == (protocol, protocol)
    assert (first.status, first.decision) == (200, "recorded")
    assert (second.status, second.decision) == (200, "shared")
    # Stored and served as received: still gzip-encoded, byte for byte.
    assert second.headers["content-encoding"] == "gzip"
    assert second.body == first.body == GZIP_BODY
    assert tls_upstream.state.count("/gzip") == 1
