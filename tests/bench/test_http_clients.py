"""Rollout clients share one verifying TLS context and ignore the caller's proxy variables."""

from __future__ import annotations

import ssl

from bench import http_clients


def test_every_client_reuses_one_verifying_context() -> None:
    context = http_clients.tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    with (
        http_clients.client() as direct,
        http_clients.client(proxy="http://127.0.0.1:9") as proxied,
    ):
        # httpx keeps the context on each transport's pool: the direct one and the proxy's.
        pools = [direct._transport._pool, *(t._pool for t in proxied._mounts.values())]  # type: ignore[attr-defined]
        assert all(pool._ssl_context is context for pool in pools)


def test_a_client_ignores_proxy_variables(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    with http_clients.client(timeout=5) as client:
        assert client.trust_env is False
        assert not client._mounts  # no proxy mounted from the environment
