"""The request-head bounds of proxy/http1_limits.py, as pure functions."""

from __future__ import annotations

from mitmproxy import http

from proxy.http1_limits import MAX_CONTENT_LENGTH, head_too_large, oversized_length, refusal_bytes


def test_a_head_is_too_large_only_when_its_end_is_not_within_the_limit() -> None:
    head = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    assert not head_too_large(head + b"body" * 100, len(head))
    assert head_too_large(b"GET / HTTP/1.1\r\nX: " + b"a" * 100, 50)
    assert not head_too_large(b"GET / HTTP/1.1\nHost: x\n\n" + b"b" * 100, 30)  # bare LF ends


def test_content_length_beyond_int64_is_named() -> None:
    def request(value: str) -> http.Request:
        made = http.Request.make("POST", "http://x/")
        made.headers["Content-Length"] = value  # as received: nothing recomputes it
        return made

    assert oversized_length(request(str(MAX_CONTENT_LENGTH))) is None
    assert oversized_length(request(str(MAX_CONTENT_LENGTH + 1))) == str(MAX_CONTENT_LENGTH + 1)
    assert oversized_length(request("99999999999999999999")) == "99999999999999999999"


def test_a_refusal_is_a_closing_problem_with_a_decision() -> None:
    raw = refusal_bytes(431, "too-many-headers", "Too many", "detail")
    assert raw.startswith(b"HTTP/1.1 431 ")
    assert b"X-Groundhog-Decision: refused\r\n" in raw
    assert b"Connection: close\r\n" in raw and b"application/problem+json" in raw
