"""proxy/recording_stream.py: the buffer/stream/passthrough plan and the capped body tee."""

from __future__ import annotations

import pytest
from mitmproxy import http
from mitmproxy.test import tflow

from proxy.recording_stream import BodyTee, Plan, needs_chunked_framing, plan_response


def flow_with(
    fields: list[tuple[bytes, bytes]], *, method: str = "GET", status: int = 200
) -> http.HTTPFlow:
    flow = tflow.tflow(req=http.Request.make(method, "http://world.test/x"))
    flow.response = http.Response.make(status)
    flow.response.headers.fields = tuple(fields)
    return flow


LENGTH = (b"Content-Length", b"5")
CHUNKED = (b"Transfer-Encoding", b"chunked")
SSE = (b"Content-Type", b"text/event-stream; charset=utf-8")


@pytest.mark.parametrize(
    ("fields", "method", "status", "plan"),
    [
        ([LENGTH], "GET", 200, Plan.BUFFER),
        ([(b"Content-Length", b"11")], "GET", 200, Plan.TOO_LARGE),
        ([(b"Content-Length", b"11")], "HEAD", 200, Plan.BUFFER),  # a HEAD answer has no body
        ([], "GET", 204, Plan.BUFFER),
        ([CHUNKED], "GET", 200, Plan.STREAM),
        ([], "GET", 200, Plan.STREAM),  # read until the connection closes
        ([LENGTH, SSE], "GET", 200, Plan.STREAM),
        ([(b"Content-Length", b"nonsense")], "GET", 200, Plan.STREAM),
    ],
    ids=["small", "large", "head", "no-content", "chunked", "until-close", "sse", "bad-length"],
)
def test_the_plan_follows_the_response_head(fields, method: str, status: int, plan: Plan) -> None:
    assert plan_response(flow_with(fields, method=method, status=status), 10) is plan


def test_an_http1_stream_without_framing_gets_chunked_so_a_cut_shows() -> None:
    assert needs_chunked_framing(flow_with([]))
    assert not needs_chunked_framing(flow_with([CHUNKED]))
    assert not needs_chunked_framing(flow_with([LENGTH]))


def test_the_tee_passes_everything_and_keeps_a_copy_up_to_its_limit() -> None:
    over: list[bool] = []
    tee = BodyTee(10, on_over_limit=lambda: over.append(True))
    assert tee(b"12345") == b"12345" and tee(b"6789") == b"6789"
    assert tee.body() == b"123456789" and tee.recording
    assert tee(b"ab") == b"ab"  # the 11th byte: the copy goes, the bytes still flow
    assert not tee.recording and tee.over_limit and over == [True]
    assert tee(b"cd") == b"cd" and over == [True]
    assert tee(b"") == b"" and tee.ended and tee.size == 13
