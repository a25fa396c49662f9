"""Unit tests of groundhog/worker_env.py: proxy credentials, CA files and worker exports."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from groundhog import worker_env
from groundhog.worker_env import (
    CaFiles,
    proxy_url_from_env,
    proxy_url_with_credentials,
    shell_exports,
    store_ca,
)

PEM = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"


def test_proxy_url_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROUNDHOG_PROXY_URL", raising=False)
    assert proxy_url_from_env() == "http://127.0.0.1:8080"
    monkeypatch.setenv("GROUNDHOG_PROXY_URL", "http://env:1/")
    assert proxy_url_from_env() == "http://env:1"
    assert proxy_url_from_env("http://given:2/") == "http://given:2"


@pytest.mark.parametrize(
    ("proxy", "expected"),
    [
        ("http://127.0.0.1:8080", "http://my%20tape:root%2Fb0@127.0.0.1:8080"),
        ("https://proxy.local", "https://my%20tape:root%2Fb0@proxy.local"),
        ("http://old:cred@[::1]:9/path", "http://my%20tape:root%2Fb0@[::1]:9"),
    ],
)
def test_credentials_are_url_encoded_and_replace_old_ones(proxy: str, expected: str) -> None:
    assert proxy_url_with_credentials(proxy, "my tape", "root/b0") == expected


@pytest.mark.parametrize("proxy", ["socks5://h:1", "127.0.0.1:8080", "http://"])
def test_bad_proxy_urls_are_refused(proxy: str) -> None:
    with pytest.raises(ValueError, match="must look like http://host:port"):
        proxy_url_with_credentials(proxy, "t", "root")


def test_store_ca_writes_the_ca_and_a_bundle(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(worker_env, "public_roots", lambda: b"PUBLIC ROOTS\n\n")
    files = store_ca(PEM, "http://r", tmp_path / "ca.pem")
    assert files == CaFiles((tmp_path / "ca.pem").resolve(), (tmp_path / "ca-bundle.pem").resolve())
    assert files.ca_file.read_bytes() == PEM
    assert files.bundle_file.read_bytes() == b"PUBLIC ROOTS\n" + PEM


def test_store_ca_defaults_to_a_cache_per_resolver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    one = store_ca(PEM, "http://one:1")
    two = store_ca(PEM, "http://two:2")
    assert one.ca_file.parent != two.ca_file.parent
    assert one.ca_file.is_relative_to(tmp_path / "groundhog")
    # Rewriting identical bytes leaves the file alone (same inode, no temporary leftovers).
    inode = one.ca_file.stat().st_ino
    store_ca(PEM, "http://one:1")
    assert one.ca_file.stat().st_ino == inode
    assert sorted(path.name for path in one.ca_file.parent.iterdir()) == [
        "ca-bundle.pem",
        "ca.pem",
    ]


def test_store_ca_refuses_what_is_not_a_certificate(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="PEM certificate"):
        store_ca(b"<html>oops</html>", "http://r", tmp_path / "ca.pem")
    assert not (tmp_path / "ca.pem").exists()


def test_worker_env_sets_every_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GROUNDHOG_NO_PROXY", "extra.local, ,localhost")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    ca = CaFiles(tmp_path / "ca.pem", tmp_path / "ca-bundle.pem")
    env = worker_env.worker_env(
        tape="t",
        branch="root/b1",
        world_seed=7,
        resolver_url="http://127.0.0.1:8070",
        proxy_url="http://127.0.0.1:8080",
        ca=ca,
        no_proxy=["localhost", "127.0.0.1"],
        shim_counters={"version": 1, "b": 2},
    )
    proxy = "http://t:root%2Fb1@127.0.0.1:8080"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert env[name] == proxy
    own = "127.0.0.1:8070,127.0.0.1:8080"
    assert env["NO_PROXY"] == env["no_proxy"] == f"localhost,127.0.0.1,extra.local,{own}"
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        assert env[name] == str(ca.bundle_file)
    assert env["NODE_EXTRA_CA_CERTS"] == env["GROUNDHOG_CA_FILE"] == str(ca.ca_file)
    assert env["GROUNDHOG_WORLD_SEED"] == "7" and env["GROUNDHOG_BRANCH"] == "root/b1"
    assert json.loads(env["GROUNDHOG_SHIM_COUNTERS"]) == {"version": 1, "b": 2}


def test_no_proxy_is_set_even_when_empty(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GROUNDHOG_NO_PROXY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    env = worker_env.worker_env(
        tape="t",
        branch="root",
        world_seed=1,
        resolver_url="https://resolver.svc",
        proxy_url="http://p:1",
        ca=CaFiles(tmp_path / "a", tmp_path / "b"),
    )
    # Only Groundhog's own addresses: a named host bare too (curl ignores ports in NO_PROXY).
    assert env["NO_PROXY"] == "resolver.svc:443,resolver.svc,p:1,p"
    assert "GROUNDHOG_SHIM_COUNTERS" not in env


def test_the_policy_bypasses_the_proxy_unless_the_user_records_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GROUNDHOG_NO_PROXY", raising=False)
    monkeypatch.delenv("GROUNDHOG_RECORD_URLS", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://inference.internal/v1")

    def no_proxy() -> list[str]:
        env = worker_env.worker_env(
            tape="t",
            branch="root",
            world_seed=1,
            resolver_url="http://127.0.0.1:8070",
            proxy_url="http://127.0.0.1:8080",
            ca=CaFiles(tmp_path / "a", tmp_path / "b"),
            model_urls=["http://127.0.0.1:9100/v1"],
        )
        return env["NO_PROXY"].split(",")

    policy = ["127.0.0.1:9100", "inference.internal:443", "inference.internal"]
    assert no_proxy() == [*policy, "127.0.0.1:8070", "127.0.0.1:8080"]
    # A judge model is part of the world: the user keeps it on the tape.
    monkeypatch.setenv("GROUNDHOG_RECORD_URLS", "https://inference.internal")
    assert no_proxy() == ["127.0.0.1:9100", "127.0.0.1:8070", "127.0.0.1:8080"]
    assert worker_env.policy_addresses(["http://127.0.0.1:9100/v1"], record=[]) == [
        "127.0.0.1:9100",
        "inference.internal:443",
        "inference.internal",
    ]


def test_own_loopback_addresses_bypass_by_port_only() -> None:
    entries = worker_env.own_addresses("http://127.0.0.1:8070", "http://[::1]:8080")
    assert entries == ["127.0.0.1:8070", "[::1]:8080"], "a bare 127.0.0.1 would send worlds live"


def test_shell_exports_survive_a_real_shell() -> None:
    env = {"PLAIN": "x", "QUOTED": 'it\'s a "test" $HOME `x`'}
    script = shell_exports(env) + '\nprintf "%s\\n%s" "$PLAIN" "$QUOTED"'
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout == 'x\nit\'s a "test" $HOME `x`'


CAPABILITY = "0123456789abcdef" * 2


def test_the_capability_follows_the_branch_in_the_password_as_clients_read_it() -> None:
    import requests.utils

    url = proxy_url_with_credentials("http://127.0.0.1:8080", "demo", "root/b0", CAPABILITY)
    assert url == f"http://demo:root%2Fb0:{CAPABILITY}@127.0.0.1:8080"
    # Each client splits userinfo at its first ':' and sends Basic `user:password` decoded:
    # the proxy reads `demo:root/b0:CAPABILITY` (proxy/capabilities.py).
    expected = ("demo", f"root/b0:{CAPABILITY}")
    assert requests.utils.get_auth_from_url(url) == expected
    parsed = httpx.URL(url)
    assert (unquote(parsed.username), unquote(parsed.password)) == expected
    assert proxy_url_with_credentials("http://127.0.0.1:8080", "demo", "root", None) == (
        "http://demo:root@127.0.0.1:8080"
    )
