"""worldsim.mcp_client's TLS: one shared context that still verifies, and a caller's context.

The agent's MCP client shares one trust-store context between clients (building one per
client cost 23 ms of CPU per rollout, twice through a proxy). These tests hold what sharing must
not lose: the shared context refuses a server the trust store does not know, and a context the
caller built for a private CA is used as given. The server is real TLS on loopback with a fresh
certificate.
"""

from __future__ import annotations

import asyncio
import http.server
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.certs import write_self_signed
from tests.support.threaded_server import ThreadedServer
from worldsim import mcp_client


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on loopback answering 404 to everything, and its certificate's path."""
    certificate, key = write_self_signed(tmp_path, ["127.0.0.1"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with ThreadedServer(server) as serving:
        yield f"https://127.0.0.1:{serving.port}/mcp", certificate


def _failure_text(verify: ssl.SSLContext | bool, url: str) -> str:
    """What opening the tools at ``url`` failed with, every nested exception's text joined."""

    async def open_and_fail() -> None:
        async with mcp_client.open_tools(url, verify=verify, timeout=30):
            pass

    with pytest.raises(BaseException) as caught:
        asyncio.run(open_and_fail())
    texts: list[str] = []
    pending: list[BaseException] = [caught.value]
    while pending:
        error = pending.pop()
        texts.append(f"{type(error).__name__}: {error}")
        pending.extend(getattr(error, "exceptions", ()))
        pending.extend(cause for cause in (error.__cause__, error.__context__) if cause)
    return "\n".join(texts)


def test_the_shared_context_is_built_once_and_verifies() -> None:
    first, second = mcp_client.verifying_context(), mcp_client.verifying_context()
    assert first is second
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname


def test_the_shared_context_refuses_a_server_the_trust_store_does_not_know(tls_server) -> None:
    url, _certificate = tls_server
    assert "CERTIFICATE_VERIFY_FAILED" in _failure_text(True, url)


def test_a_callers_context_for_a_private_certificate_is_used_as_given(tls_server) -> None:
    url, certificate = tls_server
    trusting = ssl.create_default_context(cafile=str(certificate))
    failure = _failure_text(trusting, url)
    # The handshake passed: what failed is the (non-MCP) server's 404, not the certificate.
    assert "CERTIFICATE_VERIFY_FAILED" not in failure
    assert "MCPError: Not Found" in failure, failure
