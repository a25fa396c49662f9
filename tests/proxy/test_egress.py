"""How the proxy reaches the world: private upstream CAs and an egress proxy, end to end.

A TLS upstream on loopback is signed by a private CA made in the test. Through the real proxy it
fails closed with the default trust (nothing reaches it), and works with `--upstream-ca`, with
`SSL_CERT_FILE` or `REQUESTS_CA_BUNDLE` in the proxy's environment, and with
`--insecure-upstream` (logged loudly) — both for recorded exchanges and for those mitmproxy
forwards itself. With `--upstream-proxy`, live calls go through a counting forward proxy and tape
hits go nowhere.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import certifi
import pytest
import requests

from proxy.egress import (
    EgressConfigError,
    parse_upstream_proxy,
    trust_bundle,
    upstream_proxy_url,
)
from tests.proxy.clients import Reply, proxy_url
from tests.proxy.upstream_server import Upstream
from tests.support.certs import write_private_ca
from tests.support.forward_proxy import ForwardProxy
from tests.support.servers import REPO_ROOT, ServerProcess, start_server

# The proxy's own environment, minus any trust store the machine sets for everyone.
NO_AMBIENT_TRUST = {"SSL_CERT_FILE": "", "REQUESTS_CA_BUNDLE": ""}
STREAM = {"Accept": "text/event-stream"}  # an event stream: recorded while it flows


# -- pure helpers ----------------------------------------------------------------------------


def test_upstream_proxy_url_becomes_mitmproxy_mode_and_credentials() -> None:
    plain = parse_upstream_proxy("http://127.0.0.1:3128")
    assert (plain.mode, plain.auth) == ("upstream:http://127.0.0.1:3128", None)
    secured = parse_upstream_proxy("https://al%40ice:p%3Ass@egress.corp")
    assert (secured.mode, secured.auth) == ("upstream:https://egress.corp:443", "al@ice:p:ss")
    url = upstream_proxy_url([secured.mode], secured.auth)
    assert url == "https://al%40ice:p%3Ass@egress.corp:443"
    assert upstream_proxy_url(["regular"]) is None


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("socks5://127.0.0.1:1080", "scheme"),
        ("http://127.0.0.1:3128/path", "scheme://host:port"),
        ("http://:3128", "no host"),
        ("http://127.0.0.1:99999", "out of range"),
    ],
)
def test_unusable_upstream_proxy_urls_are_named(url: str, complaint: str) -> None:
    with pytest.raises(EgressConfigError, match=complaint):
        parse_upstream_proxy(url)


def test_trust_bundle_adds_private_cas_to_certifi(tmp_path: Path) -> None:
    ca, _cert, _key = write_private_ca(tmp_path, ["127.0.0.1"])
    assert trust_bundle(tmp_path / "trust", [], environ={}) is None
    bundle = trust_bundle(tmp_path / "trust", [ca], environ={"SSL_CERT_FILE": str(ca)})
    assert bundle is not None and bundle.parent == tmp_path / "trust"
    content = bundle.read_bytes()
    assert content.startswith(Path(certifi.where()).read_bytes())
    assert content.count(ca.read_bytes().strip()) == 1  # the same file is added once


def test_trust_bundle_refuses_a_bad_flag_and_skips_a_bad_environment(tmp_path: Path) -> None:
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hello")
    with pytest.raises(EgressConfigError, match=r"not\.pem"):
        trust_bundle(tmp_path, [not_pem], environ={})
    with pytest.raises(EgressConfigError, match=r"missing\.pem"):
        trust_bundle(tmp_path, [tmp_path / "missing.pem"], environ={})
    assert trust_bundle(tmp_path, [], environ={"SSL_CERT_FILE": str(not_pem)}) is None


# -- through the real proxy ------------------------------------------------------------------


@pytest.fixture(scope="module")
def private_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return write_private_ca(tmp_path_factory.mktemp("private-ca"), ["127.0.0.1", "localhost"])


@pytest.fixture
def private_world(private_ca: tuple[Path, Path, Path]) -> Iterator[Upstream]:
    _ca, cert, key = private_ca
    with Upstream(name="private", cert=(cert, key)) as server:
        yield server


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    data = tmp_path_factory.mktemp("egress-data")
    server = start_server(["resolver", "--data", str(data)])
    try:
        yield server, data
    finally:
        server.stop()


@contextlib.contextmanager
def proxy_with(
    resolver: tuple[ServerProcess, Path], *args: str, env: dict[str, str] | None = None
) -> Iterator[ServerProcess]:
    server, data = resolver
    proxy = start_server(
        ["proxy", "--resolver-url", server.url, "--data", str(data), *args],
        health_path=None,
        env={**NO_AMBIENT_TRUST, **(env or {})},
    )
    try:
        yield proxy
    finally:
        proxy.stop()


def open_tape(resolver: tuple[ServerProcess, Path], name: str, branches: int = 2) -> list[str]:
    url = resolver[0].url
    requests.post(f"{url}/v1/tapes", json={"name": name}, timeout=30).raise_for_status()
    fork = requests.post(
        f"{url}/v1/tapes/{name}/fork", json={"parent": "root", "children": branches}, timeout=30
    )
    fork.raise_for_status()
    return fork.json()["branches"]


def ask(
    proxy: ServerProcess,
    data: Path,
    tape: str,
    branch: str,
    url: str,
    headers: dict[str, str] | None = None,
) -> Reply:
    with requests.Session() as session:
        session.trust_env = False
        answer = session.get(
            url,
            headers=headers,
            proxies={s: proxy_url(proxy.port, tape, branch) for s in ("http", "https")},
            verify=str(data / "ca" / "mitmproxy-ca-cert.pem"),
            timeout=60,
        )
    return Reply(
        answer.status_code, {k.lower(): v for k, v in answer.headers.items()}, answer.content
    )


def test_default_trust_fails_closed_on_a_private_ca(resolver, private_world: Upstream) -> None:
    branch = open_tape(resolver, "ca-default")[0]
    with proxy_with(resolver) as proxy:
        recorded = ask(proxy, resolver[1], "ca-default", branch, f"{private_world.url}/item")
        native = ask(
            proxy, resolver[1], "ca-default", branch, f"{private_world.url}/sse", headers=STREAM
        )
    assert recorded.status >= 500, recorded
    assert native.status >= 500, native
    for reply in (recorded, native):  # the 502 names the fix
        assert "--upstream-ca FILE" in json.loads(reply.body)["detail"], reply
    assert private_world.state.count() == 0  # no HTTP request reached the world


@pytest.mark.parametrize("how", ["--upstream-ca", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"])
def test_a_trusted_private_ca_reaches_the_world(
    resolver, private_world: Upstream, private_ca: tuple[Path, Path, Path], how: str
) -> None:
    ca = str(private_ca[0])
    tape = f"ca-{how.strip('-').lower()}"
    branch = open_tape(resolver, tape)[0]
    args, env = ((how, ca), {}) if how.startswith("--") else ((), {how: ca})
    with proxy_with(resolver, *args, env=env) as proxy:
        recorded = ask(proxy, resolver[1], tape, branch, f"{private_world.url}/item")
        native = ask(proxy, resolver[1], tape, branch, f"{private_world.url}/sse", headers=STREAM)
    assert (recorded.status, recorded.decision) == (200, "recorded"), recorded
    assert recorded.json()["server"] == "private"
    assert (native.status, native.decision) == (200, "recorded"), native
    assert private_world.state.count() == 2


def test_insecure_upstream_works_and_says_so_loudly(resolver, private_world: Upstream) -> None:
    branch = open_tape(resolver, "ca-insecure")[0]
    with proxy_with(resolver, "--insecure-upstream") as proxy:
        recorded = ask(proxy, resolver[1], "ca-insecure", branch, f"{private_world.url}/item")
        log = proxy.log()
    assert recorded.status == 200
    assert "UPSTREAM TLS VERIFICATION IS OFF" in log


def test_an_unusable_upstream_ca_stops_the_proxy_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "typo.pem"
    bad.write_text("not a certificate")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "proxy",
            "--data",
            str(tmp_path),
            "--port",
            "1",
            "--upstream-ca",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 2
    assert "typo.pem" in done.stderr


def test_upstream_proxy_carries_every_live_call_and_no_hit(
    resolver, private_world: Upstream, private_ca: tuple[Path, Path, Path]
) -> None:
    first, second = open_tape(resolver, "egress")
    with ForwardProxy() as egress, Upstream(name="plain") as plain:
        egress_url = egress.url.replace("http://", "http://alice:s3cret@")
        with proxy_with(
            resolver, "--upstream-proxy", egress_url, "--upstream-ca", str(private_ca[0])
        ) as proxy:
            data = resolver[1]
            recorded = ask(proxy, data, "egress", first, f"{plain.url}/item")
            shared = ask(proxy, data, "egress", second, f"{plain.url}/item")
            tls = ask(proxy, data, "egress", first, f"{private_world.url}/item")
            tls_shared = ask(proxy, data, "egress", second, f"{private_world.url}/item")
            native = ask(proxy, data, "egress", first, f"{plain.url}/sse", headers=STREAM)
            seen = egress.seen
            credentials = egress.credentials
    assert (recorded.status, recorded.decision) == (200, "recorded"), recorded
    assert (shared.status, shared.decision) == (200, "shared"), shared
    assert (tls.status, tls.decision) == (200, "recorded"), tls
    assert (tls_shared.status, tls_shared.decision) == (200, "shared"), tls_shared
    assert (native.status, native.decision) == (200, "recorded"), native
    assert seen.count(f"GET {plain.url}/item") == 1  # the sibling's hit went nowhere
    assert seen.count(f"CONNECT 127.0.0.1:{private_world.port}") == 1  # none for the hit
    assert f"GET {plain.url}/sse" in seen
    assert all(value and value.startswith("Basic ") for value in credentials)
    assert plain.state.count() == 2 and private_world.state.count() == 1
