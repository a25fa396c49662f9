"""Unit tests of proxy/passthrough.py: which requests go through unrecorded from the start."""

from __future__ import annotations

import pytest
from mitmproxy.test import tutils

from proxy.passthrough import native_passthrough_kind


def _request(**headers: str) -> object:
    request = tutils.treq()
    for name, value in headers.items():
        request.headers[name.replace("_", "-")] = value
    return request


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
def test_event_stream_requests_are_not_decided_by_their_accept_header(accept: str) -> None:
    # The response decides once its head arrives (proxy.recording_stream): an event stream
    # under the limit is recorded while it flows.
    assert native_passthrough_kind(_request(accept=accept), False) is None
