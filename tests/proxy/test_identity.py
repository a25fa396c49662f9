"""Parsing the worker's identity from Proxy-Authorization."""

from __future__ import annotations

import base64

import pytest
from mitmproxy import http

from proxy.identity import (
    HEADER_BRANCH,
    HEADER_TAPE,
    Credentials,
    CredentialsError,
    connect_credentials,
    parse_proxy_authorization,
)


def basic(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (basic("demo:root/b0"), Credentials("demo", "root/b0")),
        (basic("demo:root%2Fb0%2Fb3"), Credentials("demo", "root/b0/b3")),
        (basic("demo:"), Credentials("demo", None)),
        (basic(":root"), Credentials(None, "root")),
        ("  basic " + basic("t:b").split()[1], Credentials("t", "b")),
        (None, None),
        ("", None),
    ],
)
def test_valid_credentials(value: str | None, expected: Credentials | None) -> None:
    assert parse_proxy_authorization(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Bearer abc", "not Basic"),
        ("Basic", "not Basic"),
        ("Basic !!!", "not valid base64"),
        (basic("no-colon"), "no ':'"),
    ],
)
def test_malformed_credentials_say_what_is_wrong(value: str, message: str) -> None:
    with pytest.raises(CredentialsError, match=message):
        parse_proxy_authorization(value)


def test_connect_credentials_headers_win_over_credentials() -> None:
    def connect(**headers: str) -> http.Request:
        return http.Request.make("CONNECT", "http://db.internal:5432", headers=headers)

    both = connect(**{"Proxy-Authorization": basic("t:b"), HEADER_BRANCH: "root/b1"})
    assert connect_credentials(both) == Credentials("t", "root/b1")
    assert connect_credentials(connect(**{HEADER_TAPE: "h"})) == Credentials("h", None)
    assert connect_credentials(connect()) is None
    with pytest.raises(CredentialsError):
        connect_credentials(connect(**{"Proxy-Authorization": "Bearer x"}))
