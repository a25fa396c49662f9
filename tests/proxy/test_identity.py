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
    Identity,
    connect_credentials,
    identify,
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
        ("  basic " + basic("t:root").split()[1], Credentials("t", "root")),
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

    both = connect(**{"Proxy-Authorization": basic("t:root"), HEADER_BRANCH: "root/b1"})
    assert connect_credentials(both) == Credentials("t", "root/b1")
    assert connect_credentials(connect(**{HEADER_TAPE: "h"})) == Credentials("h", None)
    assert connect_credentials(connect()) is None
    with pytest.raises(CredentialsError):
        connect_credentials(connect(**{"Proxy-Authorization": "Bearer x"}))


def request_with(*fields: tuple[bytes, bytes]) -> http.Request:
    request = http.Request.make("GET", "http://world.example/")
    request.headers.fields = fields
    return request


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (((b"X-Groundhog-Tape", b"locked\xff"), (b"X-Groundhog-Branch", b"root")), "not ASCII"),
        (((b"X-Groundhog-Tape", b"t"), (b"X-Groundhog-Branch", b"root/\x00")), "not a branch"),
        (((b"X-Groundhog-Tape", b".."), (b"X-Groundhog-Branch", b"root")), "not a tape name"),
        (((b"X-Groundhog-Tape", b"t\n"), (b"X-Groundhog-Branch", b"root")), "not a tape name"),
        (((b"x-groundhog-tape", b"t"), (b"X-Groundhog-Tape", b"u")), "given 2 times"),
        (((b"X-Groundhog-Tape", b"t"), (b"X-Groundhog-Branch", b"root%2F%FF")), "not UTF-8"),
        (((b"Proxy-Authorization", b"Basic " + base64.b64encode(b"t:root/\xc3\xa9")),), "branch"),
        (((b"X-Groundhog-Tape", b"t"), (b"X-Groundhog-Capability", b"cap\xff")), "not ASCII"),
        (((b"X-Groundhog-Tape", b"t"), (b"X-Groundhog-Capability", b"ZZ" * 16)), "capability"),
        (((b"Proxy-Authorization", b"Basic " + base64.b64encode(b"t:root:xyz")),), "capability"),
    ],
)
def test_identity_outside_the_grammar_is_refused(
    fields: tuple[tuple[bytes, bytes], ...], message: str
) -> None:
    with pytest.raises(CredentialsError, match=message):
        identify(request_with(*fields), remembered=None, default_tape=None, default_branch=None)


def test_identity_headers_are_percent_decoded_and_win() -> None:
    request = request_with(
        (b"X-Groundhog-Branch", b"root%2Fb0"),
        (b"Proxy-Authorization", basic("cred:root/b1").encode()),
    )
    identity, missing = identify(request, remembered=None, default_tape=None, default_branch=None)
    assert missing is None and identity == Identity("cred", "root/b0")
