"""Identities and negotiation in the key, through the real resolver (issue 14, items 2 and 3).

Two askers with different credentials never share an answer unless the tape declares the host's
credentials interchangeable; a sealed miss that differs only in the credential says so; the
negotiation headers and the order of repeated query names are part of the key.
"""

from __future__ import annotations

from tests.resolver.proxy_double import ProxyDouble


def _with_key(proxy: ProxyDouble, tape: str, branch: str, key: str):
    return proxy.ask(tape, branch, "GET", "/search", headers=[["X-Api-Key", key]])


def test_different_credentials_do_not_share(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    a, b, c = proxy.fork(tape_name, children=3)
    assert _with_key(proxy, tape_name, a, "alice-key-123").decision == "recorded"
    assert _with_key(proxy, tape_name, b, "alice-key-123").decision == "shared"
    assert _with_key(proxy, tape_name, c, "bob-key-456").decision == "recorded"


def test_interchangeable_hosts_share(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, interchangeable_credentials=["api.example.com"])
    a, b = proxy.fork(tape_name, children=2)
    assert _with_key(proxy, tape_name, a, "sandbox-token-a1").decision == "recorded"
    assert _with_key(proxy, tape_name, b, "sandbox-token-b2").decision == "shared"


def test_sealed_miss_names_a_credential_only_difference(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    _with_key(proxy, tape_name, a, "alice-key-123")
    assert proxy.http.post(f"/v1/tapes/{tape_name}/seal").status_code == 200
    refused = _with_key(proxy, tape_name, b, "bob-key-456")
    assert refused.decision == "refused"
    problem = refused.json()
    assert problem["credential_only_difference"] is True
    assert "interchangeable_credentials" in problem["detail"]
    assert "bob-key-456" not in refused.body.decode() and "alice" not in refused.body.decode()


def test_negotiation_headers_join_the_key(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    a, b, c = proxy.fork(tape_name, children=3)
    assert proxy.ask(tape_name, a, "GET", "/f", headers=[["Range", "bytes=0-9"]]).decision == (
        "recorded"
    )
    assert proxy.ask(tape_name, b, "GET", "/f").decision == "recorded"
    etag = [["If-None-Match", '"v1"']]
    assert proxy.ask(tape_name, c, "GET", "/f", headers=etag).decision == "recorded"


def test_ignore_headers_takes_a_negotiation_header_out(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name, ignore_headers=["Accept-Language"])
    a, b = proxy.fork(tape_name, children=2)
    assert proxy.ask(tape_name, a, "GET", "/f", headers=[["Accept-Language", "de"]]).decision == (
        "recorded"
    )
    assert proxy.ask(tape_name, b, "GET", "/f").decision == "shared"


def test_repeated_query_names_keep_their_order(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    a, b, c = proxy.fork(tape_name, children=3)
    first = proxy.ask(tape_name, a, "GET", "/s", query=[["k", "2"], ["k", "1"], ["a", "x"]])
    assert first.decision == "recorded"
    same = proxy.ask(tape_name, b, "GET", "/s", query=[["a", "x"], ["k", "2"], ["k", "1"]])
    assert same.decision == "shared"
    swapped = proxy.ask(tape_name, c, "GET", "/s", query=[["k", "1"], ["k", "2"], ["a", "x"]])
    assert swapped.decision == "recorded"
