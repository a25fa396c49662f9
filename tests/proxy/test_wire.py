"""Flows to and from the internal protocol's shapes, byte for byte."""

from __future__ import annotations

import base64

from mitmproxy import http

from groundhog.protocol.wire import TRAILER_PREFIX
from groundhog.protocol.wire_codec import resolve_payload
from proxy.wire import (
    add_upstream_headers,
    fields_from_pairs,
    pairs_from_fields,
    response_from_payload,
    response_payload,
    strip_private_headers,
)


def test_header_bytes_survive_the_json_round_trip() -> None:
    fields = ((b"X-Raw", b"\xff\xfe caf\xc3\xa9"), (b"X-Dup", b"1"), (b"X-Dup", b"2"))
    assert fields_from_pairs(pairs_from_fields(fields)) == fields


def test_strip_keeps_order_and_duplicates_of_everything_else() -> None:
    request = http.Request.make("GET", "http://example.test/")
    request.headers.fields = (
        (b"A", b"1"),
        (b"X-Groundhog-Tape", b"t"),
        (b"Proxy-Authorization", b"Basic x"),
        (b"a", b"2"),
        (b"x-groundhog-whatever", b"w"),
    )
    strip_private_headers(request)
    assert request.headers.fields == ((b"A", b"1"), (b"a", b"2"))
    add_upstream_headers(request, [["X-Groundhog-Seed", "7"]])
    assert request.headers.fields[-1] == (b"X-Groundhog-Seed", b"7")


def test_resolve_payload_shape() -> None:
    request = http.Request.make(
        "POST", "https://API.Example.test:8443/s?q=a&q=b&z=", b"\x00body", {"Accept": "*/*"}
    )
    payload = resolve_payload(request, tape="t", branch="root/b1", body_too_large=False)
    assert payload["scheme"] == "https" and payload["host"] == "api.example.test"
    assert payload["port"] == 8443 and payload["path"] == "/s"
    assert payload["query"] == [["q", "a"], ["q", "b"], ["z", ""]]
    assert base64.b64decode(payload["body"]) == b"\x00body"
    too_large = resolve_payload(request, tape="t", branch="root", body_too_large=True)
    assert too_large["body"] == "" and too_large["body_too_large"] is True


def test_served_response_is_exactly_the_recorded_one() -> None:
    body = b"\x1f\x8b not decoded"
    response = response_from_payload(
        {
            "status": 203,
            "headers": [["Content-Encoding", "gzip"], ["Set", "1"], ["Set", "2"]],
            "body": base64.b64encode(body).decode(),
        }
    )
    assert response.status_code == 203
    assert response.raw_content == body
    assert response.headers.fields == (
        (b"Content-Encoding", b"gzip"),
        (b"Set", b"1"),
        (b"Set", b"2"),
    )


def test_trailers_travel_after_the_head_and_come_back_as_trailers() -> None:
    trailers = http.Headers([(b"grpc-status", b"0"), (b"grpc-message", b"")])
    payload = response_payload(200, [(b"content-type", b"application/grpc")], b"\x00", trailers)
    assert payload["headers"][1:] == [
        [TRAILER_PREFIX + "grpc-status", "0"],
        [TRAILER_PREFIX + "grpc-message", ""],
    ]
    served = response_from_payload(payload)
    assert served.headers.fields == ((b"content-type", b"application/grpc"),)
    assert served.trailers is not None and served.trailers["grpc-status"] == "0"
    assert response_from_payload(response_payload(200, [], b"")).trailers is None
