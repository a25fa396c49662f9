"""End to end: health, Prometheus metrics, the CA certificate and bearer tokens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import ServerProcess, running_server


def test_healthz(resolver_server: ServerProcess) -> None:
    reply = httpx.get(f"{resolver_server.url}/healthz", trust_env=False)
    assert reply.json() == {"status": "ok"}


def test_metrics_count_decisions_live_calls_and_tape_sizes(
    proxy: ProxyDouble, tape_name: str
) -> None:
    proxy.open(tape_name)
    for child in proxy.fork(tape_name, children=2):
        proxy.ask(tape_name, child, path="/m")
    text = proxy.http.get("/metrics").text
    assert 'groundhog_decisions_total{decision="shared"}' in text
    assert "groundhog_live_calls_total" in text
    assert "groundhog_resolve_seconds_bucket" in text
    assert f'groundhog_tape_exchanges{{tape="{tape_name}"}} 1.0' in text


@pytest.fixture
def guarded_server(tmp_path: Path) -> Iterator[ServerProcess]:
    env = {"GROUNDHOG_ADMIN_TOKEN": "admin-secret", "GROUNDHOG_PROXY_TOKEN": "proxy-secret"}
    with running_server(["resolver", "--data", str(tmp_path)], env=env) as server:
        yield server


def test_tokens_guard_admin_and_internal_routes(guarded_server: ServerProcess) -> None:
    base = guarded_server.url
    anonymous = httpx.Client(base_url=base, trust_env=False)
    refused = anonymous.post("/v1/tapes", json={"name": "t"})
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/problem+json"
    assert "GROUNDHOG_ADMIN_TOKEN" in refused.json()["detail"]
    wrong_role = ProxyDouble(base, token="proxy-secret")
    assert wrong_role.http.post("/v1/tapes", json={"name": "t"}).status_code == 401
    admin = ProxyDouble(base, token="admin-secret")
    admin.open("t")
    assert admin.resolve("t", "root").status_code == 401
    proxy = ProxyDouble(base, token="proxy-secret")
    assert proxy.ask("t", "root", path="/x").decision == "recorded"
    assert anonymous.get("/healthz").status_code == 200


def test_ca_is_created_once_and_the_key_never_served(
    resolver_server: ServerProcess, tmp_path: Path
) -> None:
    first = httpx.get(f"{resolver_server.url}/v1/ca.pem", trust_env=False)
    assert first.status_code == 200
    assert first.text.startswith("-----BEGIN CERTIFICATE-----")
    assert "PRIVATE KEY" not in first.text
    again = httpx.get(f"{resolver_server.url}/v1/ca.pem", trust_env=False)
    assert again.text == first.text
