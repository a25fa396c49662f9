"""A recorded body is served in a coding the asker accepts; identity always works."""

from __future__ import annotations

import gzip

from mitmproxy import http

from proxy.served_coding import accepts, serve_in_accepted_coding

BODY = b'{"compressed": true}'


def _served(accept_encoding: str | None) -> http.Response:
    headers = [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")]
    packed = gzip.compress(BODY, mtime=0)
    headers.append((b"content-length", str(len(packed)).encode()))
    response = http.Response.make(200, b"", http.Headers(headers))
    response.raw_content = packed
    request_headers = (
        [] if accept_encoding is None else [(b"accept-encoding", accept_encoding.encode())]
    )
    request = http.Request.make("GET", "http://h/x", b"", http.Headers(request_headers))
    serve_in_accepted_coding(request, response)
    return response


def test_an_asker_that_refuses_the_coding_gets_identity() -> None:
    for header in ("identity", "br", "gzip;q=0, deflate"):
        response = _served(header)
        assert response.raw_content == BODY, header
        assert "content-encoding" not in response.headers
        assert response.headers["content-length"] == str(len(BODY))


def test_an_asker_that_accepts_it_or_says_nothing_gets_the_recorded_bytes() -> None:
    for header in (None, "gzip", "GZIP, br", "*", "x-gzip"):
        response = _served(header)
        assert response.raw_content == gzip.compress(BODY, mtime=0), header
        assert response.headers["content-encoding"] == "gzip"
    assert accepts("deflate, *;q=0.1", "zstd") and not accepts("deflate", "zstd")
