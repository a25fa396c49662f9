"""Unit tests of proxy/passthrough.py: which exchanges go through unrecorded, and their kind."""

from __future__ import annotations

import pytest
from mitmproxy.test import tutils

from proxy.passthrough import fetched_passthrough_kind, native_passthrough_kind
from proxy.upstream import UpstreamResponse


def _request(**headers: str) -> object:
    request = tutils.treq()
    for name, value in headers.items():
        request.headers[name.replace("_", "-")] = value
    return request


def _fetched(fields: tuple[tuple[bytes, bytes], ...] = (), too_large: bool = False) -> object:
    return UpstreamResponse(
        status=200,
        reason="OK",
        http_version="HTTP/1.1",
        fields=fields,
        body=b"",
        too_large=too_large,
    )


def test_an_ordinary_request_is_recorded() -> None:
    assert native_passthrough_kind(_request(accept="application/json"), False) is None


def test_too_large_wins_over_every_other_kind() -> None:
    request = _request(upgrade="websocket", accept="text/event-stream")
    assert native_passthrough_kind(request, True) == "too-large"


@pytest.mark.parametrize("upgrade", ["websocket", "WebSocket", "WEBSOCKET"])
def test_websocket_upgrades_pass_through(upgrade: str) -> None:
    assert native_passthrough_kind(_request(upgrade=upgrade), False) == "websocket"


def test_other_upgrades_are_not_websockets() -> None:
    assert native_passthrough_kind(_request(upgrade="h2c"), False) is None


@pytest.mark.parametrize(
    "accept", ["text/event-stream", "Text/Event-Stream", "application/json, text/event-stream"]
)
def test_event_stream_requests_are_streamed(accept: str) -> None:
    assert native_passthrough_kind(_request(accept=accept), False) == "streamed"


def test_fetched_plain_response_is_recorded() -> None:
    fields = ((b"Content-Type", b"application/json"),)
    assert fetched_passthrough_kind(_fetched(fields)) is None  # type: ignore[arg-type]


def test_fetched_too_large_response_passes_through() -> None:
    assert fetched_passthrough_kind(_fetched(too_large=True)) == "too-large"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "content_type", [b"text/event-stream", b"TEXT/EVENT-STREAM; charset=utf-8"]
)
def test_fetched_event_stream_is_streamed(content_type: bytes) -> None:
    fields = ((b"X-Other", b"1"), (b"content-TYPE", content_type))
    assert fetched_passthrough_kind(_fetched(fields)) == "streamed"  # type: ignore[arg-type]


def test_event_stream_only_counts_in_the_content_type() -> None:
    fields = ((b"X-Note", b"text/event-stream"), (b"Content-Type", b"text/plain"))
    assert fetched_passthrough_kind(_fetched(fields)) is None  # type: ignore[arg-type]
