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


SLACK_PATH = "/services/T0A1B2C3D/B0E4F5G6H/{}"


def _ask_with_shapes(proxy: ProxyDouble, tape: str, branch: str, secret: str) -> str:
    """One credential in each of this round's shapes (issue 31): a JSON family, a webhook path,
    a high-entropy query value; the decision."""
    return proxy.ask(
        tape,
        branch,
        "GET",  # a read (with a body), so siblings share it
        SLACK_PATH.format(f"Hook{secret}Abcdefgh"),
        query=[["sig", f"sas-{secret}"], ["cursor", f"Zq3xT9vLmN2pQ8rS4tU6wY1aB5cD7e{secret}"]],
        headers=[["Content-Type", "application/json"]],
        body=f'{{"creds": {{"pwd": "pw-{secret}"}}, "ids": [1]}}'.encode(),
    ).decision


def test_new_credential_shapes_keep_siblings_sharing(proxy: ProxyDouble, tape_name: str) -> None:
    proxy.open(tape_name)
    a, b, c = proxy.fork(tape_name, children=3)
    assert _ask_with_shapes(proxy, tape_name, a, "Alice1") == "recorded"
    assert _ask_with_shapes(proxy, tape_name, b, "Alice1") == "shared"
    assert _ask_with_shapes(proxy, tape_name, c, "Bobby2") == "recorded"
    report = proxy.http.get(f"/v1/tapes/{tape_name}/report").raise_for_status()
    text = report.text
    assert "Alice1" not in text and "Bobby2" not in text
    fired = report.json()["redaction"]["fired"]
    assert {"format-slack-webhook", "name-sig", "name-creds", "format-high-entropy"} <= set(fired)
