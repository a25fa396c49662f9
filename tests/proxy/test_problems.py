"""Unit tests of proxy/problems.py: the proxy's own RFC 9457 problem responses."""

from __future__ import annotations

import json

import pytest

from proxy.problems import (
    IDENTITY_HELP,
    PROBLEM_CONTENT_TYPE,
    bad_credentials,
    missing_identity,
    problem_response,
    resolver_protocol_error,
    resolver_unavailable,
)


def test_problem_response_is_complete_http() -> None:
    response = problem_response(418, "teapot", "Teapot", "short", size="stout")
    assert response.status_code == 418
    assert response.reason == "I'm a teapot"
    assert response.http_version == "HTTP/1.1"
    assert response.headers["Content-Type"] == PROBLEM_CONTENT_TYPE
    assert response.headers["Content-Length"] == str(len(response.content or b""))
    assert json.loads(response.content or b"") == {
        "type": "https://groundhog.dev/problems/teapot",
        "title": "Teapot",
        "status": 418,
        "detail": "short",
        "size": "stout",
    }
    assert response.timestamp_start is not None
    assert response.timestamp_end == response.timestamp_start


def test_unknown_status_has_an_empty_reason() -> None:
    assert problem_response(599, "x", "X", "d").reason == ""


def test_body_keys_are_sorted_for_stable_bytes() -> None:
    content = problem_response(400, "b", "B", "d", zeta=1, alpha=2).content or b""
    keys = list(json.loads(content))
    assert keys == sorted(keys)


@pytest.mark.parametrize("missing", ["tape", "branch"])
def test_missing_identity_names_what_is_missing_and_every_way_to_fix_it(missing: str) -> None:
    body = json.loads(missing_identity(missing).content or b"")
    assert body["status"] == 400 and body["missing"] == missing
    assert body["type"].endswith("/missing-identity")
    assert body["detail"].startswith(f"this request names no {missing};")
    for way in (
        "X-Groundhog-Tape",
        "http://TAPE:BRANCH@proxy:port",
        "groundhog proxy --tape TAPE --branch BRANCH",
    ):
        assert way in body["detail"]


def test_bad_credentials_keeps_the_reason_first() -> None:
    response = bad_credentials("no colon in 'abc'")
    body = json.loads(response.content or b"")
    assert response.status_code == 400
    assert body["type"].endswith("/bad-proxy-credentials")
    assert body["detail"] == f"no colon in 'abc'; {IDENTITY_HELP}"


def test_resolver_unavailable_is_503_and_says_nothing_was_forwarded() -> None:
    response = resolver_unavailable("http://127.0.0.1:9", "ConnectionRefused")
    body = json.loads(response.content or b"")
    assert response.status_code == 503
    assert body["resolver_url"] == "http://127.0.0.1:9"
    assert "(ConnectionRefused)" in body["detail"]
    assert "nothing was forwarded upstream" in body["detail"]
    assert "--resolver-url" in body["detail"]


def test_resolver_protocol_error_is_502() -> None:
    response = resolver_protocol_error("http://r", "answered a list")
    body = json.loads(response.content or b"")
    assert response.status_code == 502
    assert body["type"].endswith("/resolver-protocol-error")
    assert "(answered a list)" in body["detail"] and body["resolver_url"] == "http://r"
